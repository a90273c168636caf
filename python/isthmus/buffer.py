"""Buffer: device memory with a dtype, a shape, a device and an owner.

A Buffer owns a reference to backend memory (a ``pyopencl.Buffer`` or CuPy memory). ``close()``
drops that reference; the memory is freed when its last holder lets go (an exported DLPack view,
a Java handle, a prepared launch). Any use of a closed Buffer raises ClosedBufferError.

Closing while another thread launches (DESIGN.md, "Concurrency rule"): a launch holds the memory
of each buffer it uses from before its closed check until its enqueue, through Python references:
the packed argument of a buffer is (or holds) its backend memory object, and every path reads that
object before deciding the buffer is open. ``close()`` drops only the buffer's own references, so
the memory returns to the pool or the driver when the last launch holding it has enqueued (the
reference count is the hold count, and costs the launch nothing extra).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .dtypes import DType
from .errors import ClosedBufferError, InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device

# One entry per open Buffer, by id: setting and popping a dict item are atomic (no lock on the
# allocation path, which every library call that returns a new buffer takes, nor on close), so of
# two threads closing one buffer at once exactly one finds its entry; len() is the count.
_live: dict = {}


def live_buffers() -> int:
    """How many Buffers are open (allocated and not yet closed or collected): for leak checks."""
    return len(_live)


class Buffer:
    """Device memory.

    >>> x = dev.asarray(np.arange(5, dtype=np.float32))
    >>> x.shape, x.dtype, x.nbytes
    ((5,), dtype('float32'), 20)
    >>> with dev.zeros((2, 3), np.int32) as y:
    ...     y.to_numpy()
    """

    __slots__ = ("_mem", "_ptr", "_arg", "shape", "dtype", "nbytes", "device", "_dt", "_owner", "__weakref__")

    def __init__(self, device: "Device", mem, shape: tuple[int, ...], dt: DType, nbytes: int, owner=None):
        self.device = device
        self._mem = mem
        self._ptr = device.allocator.pointer(mem) if mem is not None else 0
        self._arg = None  # the backend's packed launch argument, made on first use (_launch_arg)
        self.shape = shape
        self._dt = dt
        self.dtype = dt.np
        self.nbytes = nbytes
        self._owner = owner  # a foreign object whose memory this buffer views (kept alive)
        _live[id(self)] = True

    @classmethod
    def _allocate(cls, device: "Device", shape, dt: DType, nbytes: int) -> "Buffer":
        return cls(device, device.allocator.alloc(nbytes) if nbytes else None, shape, dt, nbytes)

    # ---- state -------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.nbytes // self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def closed(self) -> bool:
        return self._dt is None

    @property
    def ptr(self) -> int:
        """The device pointer (CUDA) or cl_mem handle (OpenCL): the identity of the allocation."""
        self._check()
        return self._ptr

    def _check(self) -> None:
        if self._dt is None:
            raise ClosedBufferError("this buffer was closed; allocate a new one (buffers cannot be reopened)")

    def _handle(self):
        """The backend memory, for copies (raises if closed). The caller's reference holds the
        memory: it is read before the closed check (close() marks the buffer closed before it lets
        go of the memory), so a close racing the copy leaves the copy valid memory or raises.
        None for an open zero-size buffer."""
        mem = self._mem
        if self._dt is None:
            self._check()
        return mem

    def _launch_arg(self):
        """This buffer as a packed kernel argument (``device.launcher.buffer_arg``, which raises for a
        closed buffer and returns an object that holds the memory), made once and kept: launches
        read ``buf._arg or buf._launch_arg()`` (a recorder, such as graph capture, gets the Buffer)."""
        arg = self._arg = self.device.launcher.buffer_arg(self)
        if self._dt is None:  # closed meanwhile, maybe before our store: a closed buffer keeps no memory
            self._arg = None
        return arg  # the caller holds the memory until its launch is enqueued

    def close(self) -> None:
        """Release this buffer's hold on the memory. Idempotent. Launches that already hold the
        memory (packed, on their way to the queue) keep it until they are enqueued."""
        if self._dt is None or not _live.pop(id(self), False):
            return
        self._dt = None  # first: whoever then finds _mem or _arg gone also finds the buffer closed
        self._arg = self._mem = self._owner = None

    def __enter__(self) -> "Buffer":
        self._check()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        # Backstop only: GPU memory is invisible to the garbage collector, release explicitly.
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.shape} {self.dtype}"
        return f"<isthmus.Buffer {state} on {self.device.id}>"

    def __len__(self) -> int:
        self._check()
        if not self.shape:
            raise TypeError("len() of a 0-d buffer")
        return self.shape[0]

    # ---- host transfers ----------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        # Without this NumPy would build a 0-d object array around the Buffer; a device-to-host
        # copy is never implicit (CuPy refuses the same way).
        raise TypeError("an isthmus Buffer is device memory and does not convert to a NumPy array implicitly; "
                        "call buf.to_numpy() for a host copy")

    def to_numpy(self, out: np.ndarray | None = None) -> np.ndarray:
        """Copy to the host (waits for queued work that writes this buffer)."""
        mem = self._handle()
        if out is None:
            out = np.empty(self.shape, self.dtype)
        else:
            self._check_host(out, "out")
        if self.nbytes:
            self.device._host_download(mem, out)
        return out

    def copy_from(self, array) -> "Buffer":
        """Copy a host array of the same shape and dtype into this buffer."""
        mem = self._handle()
        host = np.ascontiguousarray(array) if not isinstance(array, np.ndarray) or not array.flags.c_contiguous else array
        self._check_host(host, "array")
        if self.nbytes:
            self.device._host_upload(mem, host)
        return self

    def _check_host(self, host: np.ndarray, what: str) -> None:
        if host.dtype != self.dtype:
            raise InvalidArgumentError(f"{what} has dtype {host.dtype}, this buffer holds {self.dtype}")
        if host.size != self.size:
            raise InvalidArgumentError(f"{what} has shape {host.shape} ({host.size} elements), "
                                       f"this buffer has shape {self.shape} ({self.size} elements)")
        if not host.flags.c_contiguous or (what == "out" and not host.flags.writeable):
            raise InvalidArgumentError(f"{what} must be a C-contiguous{' writeable' if what == 'out' else ''} array")

    # ---- device copies -----------------------------------------------------------------------
    def copy(self) -> "Buffer":
        """A new buffer on the same device with the same contents."""
        return self.to(self.device)

    def to(self, device) -> "Buffer":
        """A copy of this buffer on ``device`` (a Device or an id): a device copy on the same device,
        a peer copy between CUDA devices where possible, through the host otherwise."""
        mem = self._handle()
        target = self.device._lookup(device)
        out = target.empty(self.shape, self.dtype)
        if self.nbytes:
            if target is self.device:
                target._device_copy(out._mem, mem, self.nbytes)
            elif not target._peer_copy(out._mem, mem, self.device, self.nbytes):
                host = np.empty(self.shape, self.dtype)
                self.device._host_download(mem, host)
                out.copy_from(host)
        return out

    def reshape(self, *shape) -> "Buffer":
        """A view of the same memory with another shape (same number of elements); one dimension
        may be -1, inferred from the others as NumPy does.

        >>> buf.reshape(-1, 2).shape          # a buffer of 6 elements
        (3, 2)
        """
        mem, dt = self._handle(), self._dt
        asked = shape[0] if len(shape) == 1 else shape
        try:
            new = _shape(asked)
        except InvalidArgumentError:
            new = _infer(asked, self.size, self.shape)
        if int(np.prod(new, dtype=np.int64)) != self.size:
            raise InvalidArgumentError(f"cannot reshape {self.shape} ({self.size} elements) to {new}")
        if dt is None:
            self._check()
        return Buffer(self.device, mem, new, dt, self.nbytes, owner=self)

    # ---- foreign interop (CUDA) --------------------------------------------------------------
    @property
    def __cuda_array_interface__(self) -> dict:
        self._check()
        return self.device._array_interface(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._check()
        return self.device._dlpack(self, stream)

    def __dlpack_device__(self):
        self._check()
        return self.device._dlpack_device()


def _shape(shape) -> tuple[int, ...]:
    # the common cases, checked cheaply: a tuple of ints, an int
    t = type(shape)
    if t is tuple:
        for s in shape:
            if type(s) is not int or s < 0:
                break
        else:
            return shape
    elif t is int and shape >= 0:
        return (shape,)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        items = tuple(shape)
    except TypeError as exc:
        raise InvalidArgumentError(f"shape must be an int or a sequence of ints, got {shape!r}") from exc
    for s in items:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise InvalidArgumentError(f"shape {shape!r} must hold integers, got {type(s).__name__}")
        if s < 0:
            raise InvalidArgumentError(f"shape {shape!r} has a negative dimension")
    return tuple(int(s) for s in items)


def _infer(shape, size: int, old: tuple) -> tuple[int, ...]:
    """``shape`` with its one -1 replaced by what makes ``size`` elements (NumPy's reshape rule);
    anything else :func:`_shape` refuses is refused as it says."""
    items = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        unknown = [i for i, s in enumerate(items) if isinstance(s, (int, np.integer)) and s == -1]
    except TypeError:
        unknown = []
    if not unknown:
        return _shape(shape)  # (raises: not a -1 that made it fail)
    if len(unknown) > 1:
        raise InvalidArgumentError(f"cannot reshape {old} to {tuple(items)}: only one dimension may be -1")
    try:
        known = _shape(tuple(1 if i == unknown[0] else s for i, s in enumerate(items)))
    except InvalidArgumentError:
        raise InvalidArgumentError(f"shape {tuple(items)!r} must hold non-negative integers and at most one -1") from None
    rest, asked = int(np.prod(known, dtype=np.int64)), tuple(int(s) for s in items)
    if rest == 0:
        raise InvalidArgumentError(f"cannot reshape {old} to {asked}: with a dimension of 0 beside it, the -1 "
                                   f"could be any size; give every dimension")
    if size % rest:
        raise InvalidArgumentError(f"cannot reshape {old} ({size} elements) to {asked}: {size} is not a multiple "
                                   f"of {rest}, the product of the other dimensions")
    return tuple(size // rest if i == unknown[0] else s for i, s in enumerate(known))
