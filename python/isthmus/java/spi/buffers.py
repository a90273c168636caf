"""``io.isthmus.spi.BufferHandle``, host memory seen from Java, and the conversion of Java
arguments (handles and boxed numbers) to Python ones.

A direct ByteBuffer is viewed by NumPy through its memoryview (no copy); a Java primitive array
is read or written with exactly one copy (JPype's bulk array transfer)."""
from __future__ import annotations

import threading

import jpype
import numpy as np

from isthmus.buffer import Buffer
from isthmus.dtypes import lookup
from isthmus.errors import ClosedBufferError, InvalidArgumentError

from .proxy import implements, reads

_JAVA_ELEMENT = {"float": (np.float32, jpype.JFloat), "double": (np.float64, jpype.JDouble),
                 "int": (np.int32, jpype.JInt), "long": (np.int64, jpype.JLong)}


def shape(jshape) -> tuple[int, ...]:
    return tuple(int(s) for s in jshape)


def host_view(bb, dtype, shape, writable: bool = False) -> np.ndarray:
    """A NumPy view (no copy) of a direct ByteBuffer from its position, as ``shape`` of ``dtype``."""
    dtype = lookup(dtype).np  # (a name NumPy may not know yet: bfloat16 before ml_dtypes is imported)
    count = int(np.prod(shape, dtype=np.int64))
    if not bb.isDirect():
        raise InvalidArgumentError("a heap ByteBuffer cannot be shared with the device: use "
                                   "ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())")
    if writable and bb.isReadOnly():
        raise InvalidArgumentError("the ByteBuffer is read-only")
    start = int(bb.position())
    end = start + count * dtype.itemsize
    if end > int(bb.limit()):
        raise InvalidArgumentError(f"the ByteBuffer has {int(bb.limit()) - start} bytes remaining, "
                                   f"{count * dtype.itemsize} are needed")
    raw = np.frombuffer(memoryview(bb), dtype=np.uint8)
    return raw[start:end].view(dtype).reshape(shape)


def argument(a):
    """A kernel or op argument from Java: a BufferHandle's Buffer, or a boxed number."""
    if isinstance(a, BufferHandle):
        return a._live()
    if isinstance(a, int):  # java.lang.Integer/Long/Short/Byte
        return int(a)
    if isinstance(a, float):  # java.lang.Float/Double
        return float(a)
    raise InvalidArgumentError(f"kernel argument of type {type(a).__name__}; expected a DeviceBuffer or a number")


def arguments(jargs) -> list:
    # Indexing a Java Object[] is cheaper than iterating it through JPype.
    return [argument(jargs[i]) for i in range(len(jargs))]


def buffer(handle, name: str) -> Buffer:
    if not isinstance(handle, BufferHandle):
        raise InvalidArgumentError(f"{name}: expected an isthmus DeviceBuffer, got {type(handle).__name__}")
    return handle._live()


def device_handle(device):
    """The DeviceHandle of ``device``: :func:`.devices.device_handle`, which sets itself here when
    imported (a DeviceHandle makes BufferHandles, so devices.py imports this module, not the other
    way round; the Runtime, which hands Java every handle, imports devices.py)."""
    raise NotImplementedError("isthmus.java.spi.devices is not imported")


@implements("io.isthmus.spi.BufferHandle")
class BufferHandle:
    """One Java handle on a Python Buffer.

    ``owned``: the buffer was made for Java and nobody else holds it, so closing the handle
    closes the buffer. A buffer shared with Python (``to_java``, or ``from_java``, which clears
    the flag) is only let go of: Python's references keep it, the last one frees it.
    """

    def __init__(self, buffer: Buffer, owned: bool):
        self.buffer = buffer
        self.owned = owned
        self._lock = threading.Lock()
        self.as_result = None  # the io.isthmus.spi.OpResult naming this handle (spi.calls makes it once)

    def _live(self) -> Buffer:
        buf = self.buffer
        if buf is None:
            raise ClosedBufferError("this DeviceBuffer handle was closed")
        return buf

    _open_buffer = property(_live)  # (a closed handle raises)
    shape = reads("_open_buffer.shape", lambda shape: jpype.JArray(jpype.JLong)(shape))
    dtype = reads("_open_buffer.dtype", str)
    nbytes = reads("_open_buffer.nbytes")
    pointer = reads("_open_buffer.ptr")

    def device(self):
        return device_handle(self._live().device)

    def copyFrom(self, source):
        buf = self._live()
        if isinstance(source, jpype.JClass("java.nio.ByteBuffer")):
            buf.copy_from(host_view(source, buf.dtype, buf.shape))
        else:
            buf.copy_from(np.asarray(source).reshape(buf.shape))  # the one copy: JPype's bulk read

    def copyTo(self, target):
        buf = self._live()
        buf.to_numpy(out=host_view(target, buf.dtype, buf.shape, writable=True))

    def toArray(self, java_type):
        np_type, jtype = _JAVA_ELEMENT[str(java_type)]
        host = self._live().to_numpy().reshape(-1)
        if host.dtype != np_type:
            host = host.astype(np_type)
        out = jpype.JArray(jtype)(host.size)
        out[:] = host  # the one copy: JPype's bulk write (faster than the JArray(host) constructor)
        return out

    def to(self, device):
        return BufferHandle(self._live().to(device.device), owned=True)

    def close(self):
        with self._lock:
            buf, self.buffer = self.buffer, None
        if buf is not None and self.owned:
            buf.close()
