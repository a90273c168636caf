"""ClLauncher, the OpenCL device's launches: arguments set on the kernel object and one enqueue
(the hot path of every library call), the errors a refused launch raises, and prepared launches (a
private kernel object with its arguments set once)."""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import threading

from ...buffer import Buffer
from ...device import Launcher
from ...errors import ClosedBufferError, DeviceError, LaunchConfigError, OutOfMemoryError
from ...memo import BoundedMemo
from .memory import _Mem

# OpenCL status codes a refused launch returns: out of device memory (CL_MEM_OBJECT_ALLOCATION_FAILURE,
# what PyOpenCL raises as cl.MemoryError), and a grid the driver refuses (CL_INVALID_WORK_GROUP_SIZE,
# CL_INVALID_WORK_ITEM_SIZE, CL_INVALID_GLOBAL_WORK_SIZE)
_CL_MEM_OBJECT_ALLOCATION_FAILURE = -4
_GRID_REFUSED = frozenset((-54, -55, -63))


class _NativeEnqueue:
    """clEnqueueNDRangeKernel of the OpenCL ICD loader PyOpenCL itself loaded, called through ctypes
    with no event. PyOpenCL's enqueue always makes an event (a Python object and, on a queue with
    profiling, the driver's timestamps), which the launches here never read: on NVIDIA's OpenCL
    (H200, profiling queue) an enqueue costs 10.5 us this way against 17.0 through PyOpenCL
    (benchmarks/results/runs/2026-12-03-launch-enqueue-opencl/). On PoCL it costs more than
    PyOpenCL's own enqueue (see _event_less_pays). ``None`` where no loader can be found (then
    PyOpenCL's enqueue, the same launch)."""

    __slots__ = ("_fn", "_sizes")

    def __init__(self, fn):
        self._fn = fn
        self._sizes = BoundedMemo(4096)  # (global, local) -> (dims, size_t arrays): made once per grid

    @classmethod
    def find(cls, cl) -> "_NativeEnqueue | None":
        path = None
        try:  # the loader PyOpenCL's extension linked (its wheel bundles one): the same ICD vendors
            with open("/proc/self/maps") as maps:  # (address perms offset dev inode path, which may hold spaces)
                paths = (parts[5].strip() for parts in (line.split(None, 5) for line in maps) if len(parts) == 6)
                path = next((p for p in paths if "libOpenCL" in os.path.basename(p) and os.path.exists(p)), None)
        except OSError:  # not Linux
            pass
        path = path or ctypes.util.find_library("OpenCL")
        if not path:
            return None
        try:
            fn = ctypes.CDLL(path).clEnqueueNDRangeKernel
        except (OSError, AttributeError):
            return None
        vp = ctypes.c_void_p
        fn.argtypes = [vp, vp, ctypes.c_uint, vp, vp, vp, ctypes.c_uint, vp, vp]
        fn.restype = ctypes.c_int32
        return cls(fn)

    def grid(self, gsize, lsize) -> tuple:
        """(dims, global sizes, local sizes or None) as the C call takes them."""
        key = (gsize, lsize)
        found = self._sizes.table.get(key)  # (a hit, inline and not reordered: least recently made go first)
        if found is None:
            dims = len(gsize)
            array = ctypes.c_size_t * dims
            found = (dims, array(*gsize), None if lsize is None else array(*lsize))
            self._sizes[key] = found
        return found

    def __call__(self, queue_ptr: int, kernel_ptr: int, grid: tuple) -> int:
        """The enqueue's status (0: enqueued); a failed allocation is tried once more after a
        garbage collection (memory that only unreachable Python objects hold), as PyOpenCL does."""
        status = self._fn(queue_ptr, kernel_ptr, grid[0], None, grid[1], grid[2], 0, None, None)
        if status == _CL_MEM_OBJECT_ALLOCATION_FAILURE:
            gc.collect()
            status = self._fn(queue_ptr, kernel_ptr, grid[0], None, grid[1], grid[2], 0, None, None)
        return status


def _event_less_pays(platform_name: str) -> bool:
    """Whether the event-less enqueue costs less than PyOpenCL's on this platform, chosen by
    platform from measurements of both (benchmarks/launch_overhead.py measures both on any device):
    NVIDIA's OpenCL (H200, profiling queue): 10.5 us a launch against 17.0 through PyOpenCL. PoCL:
    more, not less: 10-12 us against 4-6 (PoCL 3.1, AMD EPYC), a Plan.launch 1.6-2.1 us against
    0.9-1.0 (PoCL 3.1, 2-core Xeon VM; PyOpenCL's own enqueue of the same kernel 0.7-0.8). Chosen
    by platform rather than timed at first use: a timing at start-up on a loaded machine would pick
    at random, and the choice would change from run to run. A platform not measured keeps the
    event-less enqueue (what every OpenCL device used before)."""
    return "portable computing language" not in platform_name.lower()


class ClLauncher(Launcher):
    """Launches on one OpenCL device (``device``: the OpenCLDevice that holds this part).
    ``event_less``: whether launches use the event-less enqueue (_NativeEnqueue) where a loader is
    found, else PyOpenCL's enqueue; set by platform (_event_less_pays), read when a kernel is
    launched or a launch prepared (benchmarks set it to measure both)."""

    def __init__(self, device, platform):
        self.device = device
        self._cl = device._cl
        self.event_less = _event_less_pays(platform.name)
        self._found = False  # the event-less enqueue: not looked for yet (False), none (None), or found
        self._queue_ptr = 0
        self._find_lock = threading.Lock()

    def buffer_arg(self, buf):
        # The _Mem itself, not its cl.Buffer: whoever holds the packed argument holds the memory
        # (see buffer.py). Read before the closed check: close() marks the buffer closed first.
        mem = buf._mem
        if mem is None:
            if buf._dt is None:
                raise ClosedBufferError("this buffer was closed; allocate a new one (buffers cannot be reopened)")
            return None  # an open zero-size buffer: nothing is read or written through it
        return mem

    def memory_of(self, packed):
        return packed

    def native_arg(self, packed):
        return packed.cl if isinstance(packed, _Mem) else packed

    def direct_call(self, kernel, gsize, lsize, args: list) -> tuple:
        native = self._cl.Kernel(kernel.program.native, kernel.name)  # an independent kernel object
        return native, (self.device.queue, gsize, lsize, *args), {}

    def launch(self, kernel, gsize, lsize, args):
        cl = self._cl
        native = kernel.native
        types = kernel._types
        enqueue = None
        if self.event_less:
            enqueue = self._found  # (native_enqueue's answer once found, read inline: every launch)
            if enqueue is False:
                enqueue = self.native_enqueue
        try:
            # Arguments packed (in place: the list holds each buffer's memory until the enqueue)
            # and set, then one enqueue: a scalar as its raw bytes in the declared type, a buffer
            # (or None) through set_arg. PyOpenCL's generated invoker (native(queue, ...)) does the
            # same work with ~18 us more Python per call (PoCL; benchmarks/launch_overhead.py).
            # The kernel object holds its arguments (set+enqueue is one step, under its lock), so
            # an argument is set only when it differs from the one last set there (``last``): the
            # same packed scalar object (a plan's constants), the same memory (_Mem.ref: a weak
            # reference, so the memo keeps no memory alive, and a _Mem that died can never match).
            state = kernel._backend
            with state.lock:
                last = state.memo
                if last is None:
                    last = state.memo = [None] * len(types)
                for i, v in enumerate(args):
                    c = v.__class__
                    if c is Buffer:
                        v = args[i] = v._arg or v._launch_arg()
                        c = v.__class__
                    if c is _Mem:
                        if last[i] is not v.ref:
                            native.set_arg(i, v.cl)
                            last[i] = v.ref
                    elif v is None and types[i] is None:  # a zero-size buffer; None for a scalar is converted (refused)
                        native.set_arg(i, None)
                        last[i] = None
                    else:
                        if c is not types[i]:
                            v = args[i] = kernel._convert(i, v)
                        if last[i] is not v:
                            native._set_arg_buf(i, v)
                            last[i] = v
                if enqueue is None:
                    cl.enqueue_nd_range_kernel(self.device.queue, native, gsize, lsize)
                    return
                status = enqueue(self._queue_ptr, native.int_ptr, enqueue.grid(gsize, lsize))
        except cl.Error as exc:
            raise self.launch_error(kernel, gsize, lsize, exc) from exc
        if status:
            raise self.status_error(kernel, gsize, lsize, status)

    @property
    def native_enqueue(self) -> _NativeEnqueue | None:
        """The event-less enqueue (found once per device, with its queue's pointer), or None where
        no loader is found."""
        found = self._found
        if found is False:
            queue = self.device.queue  # (the queue first: its pointer goes with the enqueue)
            with self._find_lock:
                if self._found is False:
                    self._queue_ptr = queue.int_ptr
                    self._found = _NativeEnqueue.find(self._cl)
            found = self._found
        return found

    def launch_error(self, kernel, gsize, lsize, exc):
        """The error of a launch PyOpenCL refused (a set_arg, or its enqueue): by the status it carries."""
        record = exc.args[0] if exc.args else None  # (an error PyOpenCL raised with a message only has none)
        return self.status_error(kernel, gsize, lsize, record.code() if hasattr(record, "code") else None, exc)

    def status_error(self, kernel, gsize, lsize, status: int | None, what=None):
        """The typed error of a launch refused with OpenCL ``status``; ``what``: the driver's words
        (by default the enqueue and the status's name, for the event-less enqueue)."""
        if what is None:
            names = {v: k for k, v in vars(self._cl.status_code).items() if isinstance(v, int)}
            what = f"clEnqueueNDRangeKernel failed: {names.get(status, 'status')} ({status})"
        if status == _CL_MEM_OBJECT_ALLOCATION_FAILURE:
            return OutOfMemoryError(f"launch of {kernel.name!r} on {self.device.id}: {what}")
        if status in _GRID_REFUSED:
            return LaunchConfigError(f"launch of {kernel.name!r} with global {gsize}, local {lsize} refused "
                                     f"by {self.device.id}: {what}")
        return DeviceError(f"launch of {kernel.name!r} on {self.device.id} failed: {what}")

    def prepare(self, kernel, gsize, lsize, packed):
        """A prepared launch (plan.py): a private kernel object with its arguments set once."""
        return _PreparedLaunch(self, kernel, gsize, lsize, packed)


class _PreparedLaunch:
    """One kernel object per plan, so setting its arguments once is safe: launches only enqueue."""

    __slots__ = ("_launcher", "_kernel", "_native", "_args", "_enqueue", "_native_args", "_call", "_error")

    def __init__(self, launcher: ClLauncher, kernel, gsize, lsize, packed):
        cl = launcher._cl
        self._launcher = launcher
        self._kernel = kernel
        self._native = launcher.device.compiler.function(kernel.program.native, kernel.name)
        try:
            self._native.set_args(*[launcher.native_arg(v) for v in packed])
        except cl.Error as exc:
            raise launcher.launch_error(kernel, gsize, lsize, exc) from exc
        self._args = (launcher.device.queue, self._native, tuple(gsize), None if lsize is None else tuple(lsize))
        self._enqueue = launcher.native_enqueue if launcher.event_less else None
        self._call, self._error = cl.enqueue_nd_range_kernel, cl.Error  # (looked up once: launch is hot)
        if self._enqueue is not None:
            self._native_args = (launcher._queue_ptr, self._native.int_ptr, self._enqueue.grid(*self._args[2:]))

    def launch(self) -> None:
        enqueue = self._enqueue
        if enqueue is not None:
            status = enqueue(*self._native_args)
            if status:
                raise self._launcher.status_error(self._kernel, self._args[2], self._args[3], status)
            return
        try:
            self._call(*self._args)
        except self._error as exc:
            raise self._launcher.launch_error(self._kernel, self._args[2], self._args[3], exc) from exc

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
