"""The Python side of the Java SPI (``io.isthmus.spi``): JPype proxies over the runtime.

Every proxy method goes through :func:`_spi`, which turns a Python exception into the matching
``io.isthmus.*Exception`` carrying the Python type, message and traceback text (a bare Python
exception would reach Java without its message). Java exceptions pass through unchanged.

Host memory: a direct ByteBuffer is viewed by NumPy through its memoryview (no copy); a Java
primitive array is read or written with exactly one copy (JPype's bulk array transfer).
"""
from __future__ import annotations

import functools
import threading
import traceback

import jpype
import numpy as np

import isthmus
from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError
from isthmus.launch import LaunchConfig

# Python error class name -> Java exception class, looked up along the MRO.
_JAVA_ERRORS = {
    "CompileError": "io.isthmus.CompileException",
    "LaunchConfigError": "io.isthmus.LaunchConfigException",
    "UnsupportedDtypeError": "io.isthmus.UnsupportedDtypeException",
    "InvalidArgumentError": "io.isthmus.InvalidArgumentException",
    "ClosedBufferError": "io.isthmus.ClosedBufferException",
    "OutOfMemoryError": "io.isthmus.OutOfDeviceMemoryException",
    "DeviceError": "io.isthmus.DeviceException",
    "BackendUnavailableError": "io.isthmus.BackendUnavailableException",
    "DatabaseError": "io.isthmus.DatabaseException",
    "IsthmusError": "io.isthmus.IsthmusException",
    # not raised on purpose by isthmus, but bad input all the same
    "TypeError": "io.isthmus.InvalidArgumentException",
    "ValueError": "io.isthmus.InvalidArgumentException",
}

_JAVA_ELEMENT = {"float": (np.float32, jpype.JFloat), "double": (np.float64, jpype.JDouble),
                 "int": (np.int32, jpype.JInt), "long": (np.int64, jpype.JLong)}


def java_error(exc: BaseException):
    """The Java exception for a Python one, with the Python type, message and traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    pytype = f"{type(exc).__module__}.{type(exc).__qualname__}"
    name = next((_JAVA_ERRORS[c.__name__] for c in type(exc).__mro__ if c.__name__ in _JAVA_ERRORS),
                "io.isthmus.IsthmusException")
    message = str(exc) or type(exc).__name__
    cls = jpype.JClass(name)
    if name == "io.isthmus.CompileException":
        return cls(message, pytype, text, getattr(exc, "log", "") or "", getattr(exc, "kernel_name", None) or None)
    return cls(message, pytype, text)


def _spi(fn):
    """Map every Python exception leaving an SPI method to its Java exception."""
    @functools.wraps(fn)
    def call(*args):
        try:
            return fn(*args)
        except jpype.JException:
            raise
        except Exception as exc:  # noqa: BLE001 - every error must reach Java with its message
            raise java_error(exc) from None
    return jpype.JOverride(call)


def _shape(jshape) -> tuple[int, ...]:
    return tuple(int(s) for s in jshape)


def _host_view(bb, dtype, shape, writable: bool = False) -> np.ndarray:
    """A NumPy view (no copy) of a direct ByteBuffer from its position, as ``shape`` of ``dtype``."""
    dtype = np.dtype(dtype)
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


@jpype.JImplements("io.isthmus.spi.KernelHandle", deferred=True)
class KernelHandle:
    """A compiled or library kernel, launched from Java."""

    def __init__(self, kernel, library: bool):
        self.kernel = kernel
        self.library = library
        self._configs: dict = {}

    @_spi
    def name(self):
        return self.kernel.name

    @_spi
    def launch(self, jglobal, jlocal, jargs):
        # Indexing a Java Object[] is cheaper than iterating it through JPype.
        args = [_argument(jargs[i]) for i in range(len(jargs))]
        if self.library:
            if jglobal is not None:
                raise isthmus.LaunchConfigError(f"library kernel {self.kernel.name!r} sizes its own grid: "
                                                "call launch(args...) without a LaunchConfig")
            result = self.kernel(*args)
            return _result(result, args, jargs)
        if jglobal is None:
            raise isthmus.LaunchConfigError(f"kernel {self.kernel.name!r} needs a grid: "
                                            "launch(LaunchConfig.of(globalSize), args...)")
        self.kernel(*args, config=self._config(jglobal, jlocal))
        return None

    @_spi
    def memo(self, jglobal, jlocal, jargs):
        """The plan behind Java's launch memo (io.isthmus.Kernel): these exact arguments, checked
        and packed once, unpinned, so a closed buffer is freed at once and refused at launch."""
        from isthmus.plan import Plan

        from .launch_spi import PlanHandle

        args = [_argument(jargs[i]) for i in range(len(jargs))]
        return PlanHandle(Plan(self.kernel, args, self._config(jglobal, jlocal), pin=False))

    def _config(self, jglobal, jlocal) -> LaunchConfig:
        # The grid's raw bytes are the memo key: reading a long[] element by element costs more.
        key = (bytes(memoryview(jglobal)), None if jlocal is None else bytes(memoryview(jlocal)))
        config = self._configs.get(key)
        if config is None:
            config = self._configs[key] = LaunchConfig(tuple(np.asarray(jglobal).tolist()),
                                                       None if jlocal is None else tuple(np.asarray(jlocal).tolist()))
        return config

    @_spi
    def prepare(self, jglobal, jlocal, jargs):
        from .launch_spi import prepare

        return prepare(self, jglobal, jlocal, jargs)


def _argument(a):
    if isinstance(a, BufferHandle):
        return a.live()
    if isinstance(a, int):  # java.lang.Integer/Long/Short/Byte
        return int(a)
    if isinstance(a, float):  # java.lang.Float/Double
        return float(a)
    raise InvalidArgumentError(f"kernel argument of type {type(a).__name__}; expected a DeviceBuffer or a number")


def _result(result, args, jargs):
    """Java handle for an op's result: the caller's own handle when the op returned an input."""
    if not isinstance(result, Buffer):
        return None
    for py, j in zip(args, jargs):
        if py is result and isinstance(j, BufferHandle):
            return j
    return BufferHandle(result, owned=True)


@jpype.JImplements("io.isthmus.spi.BufferHandle", deferred=True)
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

    def live(self) -> Buffer:
        buf = self.buffer
        if buf is None:
            raise isthmus.ClosedBufferError("this DeviceBuffer handle was closed")
        return buf

    @_spi
    def shape(self):
        return jpype.JArray(jpype.JLong)(self.live().shape)

    @_spi
    def dtype(self):
        return str(self.live().dtype)

    @_spi
    def nbytes(self):
        return self.live().nbytes

    @_spi
    def device(self):
        return device_handle(self.live().device)

    @_spi
    def pointer(self):
        return self.live().ptr

    @_spi
    def copyFrom(self, source):
        buf = self.live()
        if isinstance(source, jpype.JClass("java.nio.ByteBuffer")):
            buf.copy_from(_host_view(source, buf.dtype, buf.shape))
        else:
            buf.copy_from(np.asarray(source).reshape(buf.shape))  # the one copy: JPype's bulk read

    @_spi
    def copyTo(self, target):
        buf = self.live()
        buf.to_numpy(out=_host_view(target, buf.dtype, buf.shape, writable=True))

    @_spi
    def toArray(self, java_type):
        np_type, jtype = _JAVA_ELEMENT[str(java_type)]
        host = self.live().to_numpy().reshape(-1)
        if host.dtype != np_type:
            host = host.astype(np_type)
        out = jpype.JArray(jtype)(host.size)
        out[:] = host  # the one copy: JPype's bulk write (faster than the JArray(host) constructor)
        return out

    @_spi
    def to(self, device):
        return BufferHandle(self.live().to(device.device), owned=True)

    @_spi
    def close(self):
        with self._lock:
            buf, self.buffer = self.buffer, None
        if buf is not None and self.owned:
            buf.close()


@jpype.JImplements("io.isthmus.spi.DeviceHandle", deferred=True)
class DeviceHandle:
    """A Python Device seen from Java."""

    def __init__(self, device):
        self.device = device

    @_spi
    def id(self):
        return self.device.id

    @_spi
    def name(self):
        return self.device.name

    @_spi
    def vendor(self):
        return self.device.vendor

    @_spi
    def backend(self):
        return self.device.backend

    @_spi
    def memory(self):
        return int(self.device.memory)

    @_spi
    def memoryInUse(self):
        return int(self.device.memory_in_use())

    @_spi
    def freePool(self):
        self.device.free_pool()

    @_spi
    def computeUnits(self):
        return int(self.device.compute_units)

    @_spi
    def maxWorkGroupSize(self):
        return int(self.device.max_work_group_size)

    @_spi
    def allocate(self, dtype, shape):
        return BufferHandle(self.device.empty(_shape(shape), str(dtype)), owned=True)

    @_spi
    def fromArray(self, array, shape):
        host = np.asarray(array).reshape(_shape(shape))  # the one copy: JPype's bulk read
        return BufferHandle(self.device.asarray(host), owned=True)

    @_spi
    def fromBuffer(self, data, dtype, shape):
        return BufferHandle(self.device.asarray(_host_view(data, str(dtype), _shape(shape))), owned=True)

    @_spi
    def allocateHost(self, dtype, shape):
        array = self.device.empty_host(_shape(shape), str(dtype))
        order = jpype.JClass("java.nio.ByteOrder").nativeOrder()
        if array.nbytes == 0:
            return jpype.JClass("java.nio.ByteBuffer").allocateDirect(0).order(order)
        # the direct buffer holds a reference to the array, so the pinned memory lives as long
        # as the ByteBuffer does
        return jpype.nio.convertToDirectBuffer(array).order(order)

    @_spi
    def kernel(self, name):
        return KernelHandle(self.device.kernel(str(name)), library=True)

    @_spi
    def compile(self, source, name, names, values):
        defines = {str(k): (None if v is None else str(v)) for k, v in zip(names, values)}
        for k, v in defines.items():
            if v is None:
                raise InvalidArgumentError(f"define {k!r} has a null value")
        return KernelHandle(self.device.compile(str(source), str(name), defines), library=False)

    @_spi
    def synchronize(self):
        self.device.synchronize()

    @_spi
    def capture(self, body):
        from .launch_spi import capture

        return capture(self.device, body)

    @_spi
    def fuse(self, expression):
        from .launch_spi import fuse

        return fuse(self.device, expression)


_devices: dict[str, DeviceHandle] = {}


def device_handle(device) -> DeviceHandle:
    handle = _devices.get(device.id)
    if handle is None or handle.device is not device:
        handle = _devices[device.id] = DeviceHandle(device)
    return handle


def _buf(handle, name: str) -> Buffer:
    if not isinstance(handle, BufferHandle):
        raise InvalidArgumentError(f"{name}: expected an isthmus DeviceBuffer, got {type(handle).__name__}")
    return handle.live()


@jpype.JImplements("io.isthmus.spi.Runtime", deferred=True)
class Runtime:
    """The runtime attached to the JVM (``io.isthmus.Isthmus.get()``)."""

    def __init__(self):
        self.threads: list[threading.Thread] = []

    @_spi
    def devices(self):
        return jpype.JArray(jpype.JClass("io.isthmus.spi.DeviceHandle"))(
            [device_handle(d) for d in isthmus.devices()])

    @_spi
    def device(self, id):
        return device_handle(isthmus.device(None if id is None else str(id)))

    @_spi
    def axpy(self, a, x, y):
        isthmus.ops.axpy(float(a), _buf(x, "x"), _buf(y, "y"))

    @_spi
    def sum(self, x):
        return BufferHandle(isthmus.ops.sum(_buf(x, "x")), owned=True)

    @_spi
    def max(self, x):
        return BufferHandle(isthmus.ops.max(_buf(x, "x")), owned=True)

    @_spi
    def softmax(self, x):
        return BufferHandle(isthmus.ops.softmax(_buf(x, "x")), owned=True)

    @_spi
    def transpose(self, x):
        return BufferHandle(isthmus.ops.transpose(_buf(x, "x")), owned=True)

    @_spi
    def gemm(self, a, b, c, alpha, beta, trans_a, trans_b):
        cb = None if c is None else _buf(c, "c")
        out = isthmus.ops.gemm(_buf(a, "a"), _buf(b, "b"), cb, float(alpha), float(beta), trans_a=bool(trans_a),
                               trans_b=bool(trans_b))
        return c if out is cb and cb is not None else BufferHandle(out, owned=True)

    @_spi
    def tune(self, kernel, device, problem, dtype, strategy, budget, seconds, seed):
        from isthmus.tune.java_spi import tune

        return tune(kernel, device.device, problem, dtype, strategy, budget, seconds, seed)

    @_spi
    def declare(self, name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space):
        from isthmus.tune.java_spi import declare

        declare(name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space)

    @_spi
    def tunedConfig(self, kernel, device, problem, dtype):
        from isthmus.tune.java_spi import tuned_config

        return tuned_config(kernel, device.device, problem, dtype)

    @_spi
    def startThreads(self, body, prefix, count):
        for i in range(int(count)):
            t = threading.Thread(target=body.run, name=f"{prefix}-{len(self.threads)}", daemon=True)
            self.threads.append(t)
            t.start()

    @_spi
    def liveBuffers(self):
        return isthmus.live_buffers()

    @_spi
    def version(self):
        return f"isthmus {isthmus.__version__}, jpype {jpype.__version__}, numpy {np.__version__}"

    @_spi
    def hostAddress(self, buffer):
        return _host_view(buffer, np.uint8, (int(buffer.limit()) - int(buffer.position()),)).ctypes.data

    def join_threads(self, timeout: float) -> None:
        for t in self.threads:
            t.join(timeout)
        self.threads = [t for t in self.threads if t.is_alive()]
