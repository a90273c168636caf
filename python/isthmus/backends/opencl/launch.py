"""OpenCLDevice's launches: arguments set on the kernel object and one enqueue (the hot path of
every library call), the errors a refused launch raises, and prepared launches (a private kernel
object with its arguments set once)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...buffer import Buffer
from ...errors import ClosedBufferError, DeviceError, LaunchConfigError, OutOfMemoryError
from .memory import _Mem

if TYPE_CHECKING:
    from .device import OpenCLDevice


class _Launch:
    """The launching hooks of :class:`~.device.OpenCLDevice` (a part of it)."""

    def _buffer_arg(self, buf):
        # The _Mem itself, not its cl.Buffer: whoever holds the packed argument holds the memory
        # (see buffer.py). Read before the closed check: close() marks the buffer closed first.
        mem = buf._mem
        if mem is None:
            if buf._dt is None:
                raise ClosedBufferError("this buffer was closed; allocate a new one (buffers cannot be reopened)")
            return None  # an open zero-size buffer: nothing is read or written through it
        return mem

    def _memory_of(self, packed):
        return packed

    def _native_arg(self, packed):
        return packed.cl if isinstance(packed, _Mem) else packed

    def _direct_call(self, kernel, gsize, lsize, args: list) -> tuple:
        native = self._cl.Kernel(kernel.program.native, kernel.name)  # an independent kernel object
        return native, (self.queue, gsize, lsize, *args), {}

    def _launch(self, kernel, gsize, lsize, args):
        cl = self._cl
        native = kernel.native
        types = kernel._types
        try:
            # Arguments packed (in place: the list holds each buffer's memory until the enqueue)
            # and set one by one, then one enqueue: a scalar as its raw bytes in the declared type,
            # a buffer (or None) through set_arg. PyOpenCL's generated invoker (native(queue, ...))
            # does the same work with ~18 us more Python per call (PoCL; benchmarks/
            # launch_overhead.py). The kernel object holds its arguments: set+enqueue is one step.
            with kernel._lock:
                for i, v in enumerate(args):
                    c = v.__class__
                    if c is Buffer:
                        v = args[i] = v._arg or v._launch_arg()
                        native.set_arg(i, None if v is None else v.cl)
                    elif c is _Mem:
                        native.set_arg(i, v.cl)
                    elif v is None:
                        native.set_arg(i, None)
                    else:
                        if c is not types[i]:
                            v = args[i] = kernel._convert(i, v)
                        native._set_arg_buf(i, v)
                cl.enqueue_nd_range_kernel(self.queue, native, gsize, lsize)
        except cl.Error as exc:
            raise self._launch_error(kernel, gsize, lsize, exc) from exc

    def _launch_error(self, kernel, gsize, lsize, exc):
        cl = self._cl
        if isinstance(exc, cl.MemoryError):
            return OutOfMemoryError(f"launch of {kernel.name!r} on {self.id}: {exc}")
        if isinstance(exc, cl.LogicError) and any(w in str(exc) for w in ("WORK_GROUP_SIZE", "WORK_ITEM_SIZE",
                                                                          "GLOBAL_WORK_SIZE")):
            return LaunchConfigError(f"launch of {kernel.name!r} with global {gsize}, local {lsize} refused "
                                     f"by {self.id}: {exc}")
        return DeviceError(f"launch of {kernel.name!r} on {self.id} failed: {exc}")

    def _prepare(self, kernel, gsize, lsize, packed):
        """A prepared launch (plan.py): a private kernel object with its arguments set once."""
        return _PreparedLaunch(self, kernel, gsize, lsize, packed)


class _PreparedLaunch:
    """One kernel object per plan, so setting its arguments once is safe: launches only enqueue."""

    __slots__ = ("_dev", "_kernel", "_native", "_args", "_enqueue")

    def __init__(self, dev: OpenCLDevice, kernel, gsize, lsize, packed):
        cl = dev._cl
        self._dev = dev
        self._kernel = kernel
        self._native = dev._function(kernel.program.native, kernel.name)
        try:
            self._native.set_args(*[dev._native_arg(v) for v in packed])
        except cl.Error as exc:
            raise dev._launch_error(kernel, gsize, lsize, exc) from exc
        self._args = (dev.queue, self._native, tuple(gsize), None if lsize is None else tuple(lsize))
        self._enqueue = cl.enqueue_nd_range_kernel

    def launch(self) -> None:
        try:
            self._enqueue(*self._args)
        except self._dev._cl.Error as exc:
            raise self._dev._launch_error(self._kernel, self._args[2], self._args[3], exc) from exc

    enqueue = launch  # what a graph replays (the same call here; CUDA's plan launch may differ)

    def set(self, index: int, value) -> None:
        """One kernel argument: a buffer (a _Mem: its cl.Buffer) or None (a zero-size buffer) through
        set_arg; anything else is a NumPy scalar of the declared type (kernel.py converts every scalar),
        set as its raw bytes, which is what PyOpenCL's generated argument setters call (set_arg's
        generic dispatch costs ~100x more on PoCL)."""
        if value.__class__ is _Mem:
            self._native.set_arg(index, value.cl)
        elif value is None:
            self._native.set_arg(index, None)
        else:
            self._native._set_arg_buf(index, value)
