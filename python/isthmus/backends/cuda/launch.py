"""CudaLauncher, the CUDA device's launches: packed arguments (a device pointer that holds its
memory), the grid, the per-kernel launch memo, and prepared launches (a driver parameter block
packed once; a one-kernel CUDA graph once it repeats). This is every library call's hot path: it
is tuned for host time (benchmarks/diagnostics/cuda_launch_paths.py)."""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ...buffer import Buffer
from ...device import Launcher
from ...errors import ClosedBufferError, DeviceError, LaunchConfigError
from ...memo import BoundedMemo
from . import graphs
from .compiler import defines_as_source

_GRID_LIMITS = (2**31 - 1, 65535, 65535)
_ATTR_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def _local_for(gsize: tuple[int, ...]) -> tuple[int, ...]:
    """A block shape that divides the grid: per dimension the largest divisor under a cap."""
    caps = {1: (256,), 2: (32, 8), 3: (16, 8, 4)}[len(gsize)]
    return tuple(next((d for d in range(min(g, cap), 0, -1) if g % d == 0), 1) for g, cap in zip(gsize, caps))


class CudaLauncher(Launcher):
    """Launches on one CUDA device (``device``: the CudaDevice that holds this part)."""

    def __init__(self, device):
        self.device = device
        self._cp = device._cp

    def dynamic_shared(self, kernel) -> int:
        """The dynamic shared memory bytes of ``kernel``'s launches; above the default 48 KiB the
        driver must first raise the kernel's limit (once per kernel and size)."""
        dyn = int(getattr(kernel, "dynamic_local_bytes", 0) or 0)
        if not dyn:
            return 0
        dev = self.device
        if dyn > dev.local_mem_optin:
            raise LaunchConfigError(f"kernel {kernel.name!r} asks for {dyn} bytes of dynamic shared memory; "
                                    f"{dev.id} allows at most {dev.local_mem_optin}: use a smaller tile or fewer stages")
        state = kernel._backend
        if dyn > dev.local_mem_size and state.dyn_limit < dyn:
            try:
                with dev._cp_device:
                    self._cp.cuda.driver.funcSetAttribute(kernel.native.ptr, _ATTR_MAX_DYNAMIC_SHARED, dyn)
            except self._cp.cuda.driver.CUDADriverError as exc:
                raise LaunchConfigError(f"kernel {kernel.name!r}: raising its dynamic shared memory to {dyn} bytes "
                                        f"failed on {dev.id}: {exc}") from exc
            state.dyn_limit = dyn
        return dyn

    def buffer_arg(self, buf):
        # A device pointer that holds its memory: whoever holds the packed argument holds the
        # allocation (see buffer.py), so it returns to CuPy's pool only after the launch is queued.
        # Read before the closed check: close() marks the buffer closed first.
        mem = buf._mem
        if mem is None:
            if buf._dt is None:
                raise ClosedBufferError("this buffer was closed; allocate a new one (buffers cannot be reopened)")
            return _NULL  # an open zero-size buffer: nothing is read or written through it
        arg = _DevicePointer(buf._ptr)
        arg.mem = mem
        return arg

    def memory_of(self, packed):
        return getattr(packed, "mem", None)

    def native_arg(self, packed):
        return np.uint64(packed) if packed.__class__ is _DevicePointer else packed

    def direct_call(self, kernel, gsize, lsize, args: list) -> tuple:
        compiler = self.device.compiler
        src = defines_as_source(kernel.program.options) + compiler.prepare_source(kernel.program.source)
        raw = self._cp.RawKernel(src, kernel.name, options=tuple(compiler._nvrtc_options()))
        return raw, (tuple(a // b for a, b in zip(gsize, lsize)), lsize, args), {"stream": self.device.stream}

    def grid(self, kernel, gsize, lsize) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(blocks per grid, threads per block) for OpenCL-style global/local sizes."""
        if lsize is None:
            lsize = _local_for(gsize)
        grid = tuple(g // l for g, l in zip(gsize, lsize))
        for i, n in enumerate(grid):
            if n > _GRID_LIMITS[i]:
                raise LaunchConfigError(f"launch of {kernel.name!r}: {n} work-groups in dimension {i} exceed CUDA's "
                                        f"limit of {_GRID_LIMITS[i]}")
        return grid, tuple(lsize)

    def prepare(self, kernel, gsize, lsize, packed):
        """A prepared launch (plan.py): the driver's parameter block packed once."""
        return _PreparedLaunch(self, kernel, gsize, lsize, packed)

    def launch(self, kernel, gsize, lsize, args):
        # The arguments packed in place (Device._launch's contract), then the launch key. Packed
        # buffers are _DevicePointer ints, so hashing the key and comparing it with a remembered
        # one (plain ints) stays in C.
        types = kernel._types
        for i, v in enumerate(args):
            c = v.__class__
            if c is Buffer:
                args[i] = v._arg or v._launch_arg()
            elif v is None:  # an optional buffer left out: a null pointer (never the address of None)
                args[i] = _NULL
            elif c is not types[i] and types[i] is not None:
                args[i] = kernel._convert(i, v)
        # A launch seen again (same grid, same argument values) replays its own prepared launch
        # (driver parameter block packed once; after three replays a one-kernel graph). A launch
        # not seen recently refills the grid's scratch parameter block in place, which costs far
        # less than preparing a launch that may never come back.
        key = (gsize, lsize, *args)
        state = kernel._backend
        memo = state.memo
        if memo is None:
            memo = state.memo = _LaunchMemo()
        table = memo.prepared.table
        try:  # (the memo's get, inline: the repeated launch is the common one)
            prepared = table[key]
            table.move_to_end(key)
        except KeyError:
            prepared = None
        if prepared is not None:
            prepared.launch()
            return
        # Launches seen once are remembered by their key's hash (a collision only prepares a launch
        # early), prepared ones by plain pointer values: the memo never holds a buffer's memory.
        seen = hash(key)
        if seen in memo.seen:  # the second sighting: keep it prepared
            memo.seen.discard(seen)
            prepared = memo.prepared[_plain(key)] = self.prepare(kernel, gsize, lsize, args)
            prepared.launch()
            return
        if len(memo.seen) >= memo.SEEN_MAX:
            memo.seen.clear()
        memo.seen.add(seen)
        scratch = memo.scratch.get((gsize, lsize))
        if scratch is None:
            scratch = memo.scratch[(gsize, lsize)] = self.prepare(kernel, gsize, lsize, args)
            scratch._calm = _PreparedLaunch.NEVER  # refilled at every use: never a graph
        scratch.refill(args)


class _DevicePointer(int):
    """A packed buffer argument: the device pointer (an int: equal to, and hashing like, the plain
    int a launch memo keeps, both compared in C), holding the buffer's memory in ``mem``."""

    mem = None  # (an int subclass cannot have __slots__: ``mem`` lives in the instance __dict__)


def _plain(key: tuple) -> tuple:
    """A launch key with plain int pointers (a memo that kept a _DevicePointer would keep its
    memory from going back to the pool)."""
    return tuple(int(v) if v.__class__ is _DevicePointer else v for v in key)


_NULL = _DevicePointer(0)  # a zero-size buffer's argument (holds no memory)


class _LaunchMemo:
    """What CudaLauncher.launch remembers of one kernel's launches (its KernelState.memo): prepared
    launches by launch key (grid and packed arguments) and one scratch launch per grid, each a
    BoundedMemo (least recently used dropped), and the hashes of launch keys seen once (a set
    emptied when it reaches its bound)."""

    PREPARED_MAX, SEEN_MAX, SCRATCH_MAX = 64, 256, 16
    __slots__ = ("prepared", "seen", "scratch")

    def __init__(self):
        self.prepared = BoundedMemo(self.PREPARED_MAX)
        self.seen: set = set()
        self.scratch = BoundedMemo(self.SCRATCH_MAX)


class _PreparedLaunch:
    """cuLaunchKernel with a parameter block packed once: ``kernelParams`` is an array of pointers,
    one per argument, each to a one-element NumPy array holding the value (a device pointer as
    uint64 or the scalar in its declared type). Rebinding writes into that array in place, so the
    pointer block never changes; both live as long as this object.

    A launch repeated ``GRAPH_AFTER`` times with no rebinding in between becomes a one-kernel CUDA
    graph (captured once on the device's private capture stream, see
    :func:`graphs.one_kernel`): replaying it costs the host about a third of the driver
    call (benchmarks/cuda_launch_paths.py). A rebind drops the graph; the launch goes back to the
    driver call until it repeats again. ``enqueue(stream)`` is always the driver call (what a
    stream capture of a whole isthmus Graph records)."""

    GRAPH_AFTER = 3
    NEVER = -(1 << 62)  # a _calm that never counts up to GRAPH_AFTER: this launch stays a driver call

    __slots__ = ("_dev", "_kernel", "_cells", "_params", "_args", "_call", "_get_device", "_index", "_graph",
                 "_calm", "_lock", "_stream")

    def __init__(self, launcher: CudaLauncher, kernel, gsize, lsize, packed):
        dev = launcher.device
        grid, block = launcher.grid(kernel, gsize, lsize)
        grid, block = (grid + (1, 1))[:3], (block + (1, 1))[:3]
        self._dev = dev
        self._kernel = kernel
        self._cells = [np.array([0 if v is None else v],
                                dtype=np.uint64 if v is None or v.__class__ is _DevicePointer else np.asarray(v).dtype)
                       for v in packed]
        self._params = (ctypes.c_void_p * max(1, len(packed)))(*[c.ctypes.data for c in self._cells])
        self._stream = dev.stream
        dyn = launcher.dynamic_shared(kernel) if getattr(kernel, "dynamic_local_bytes", 0) else 0
        self._args = (kernel.native.ptr, *grid, *block, dyn, self._stream.ptr, ctypes.addressof(self._params), 0)
        self._call = dev._cp.cuda.driver.launchKernel
        self._get_device = dev._cp.cuda.runtime.getDevice
        self._index = dev.index
        self._graph = None
        self._calm = 0 if dev._launch_graphs else self.NEVER
        self._lock = threading.Lock()

    def launch(self) -> None:
        graph = self._graph
        if graph is not None:
            self._lock.acquire()  # one executable graph is not launched from two threads at once
            try:
                if self._get_device() != self._index:
                    with self._dev._cp_device:
                        graph.launch(self._stream)
                else:
                    graph.launch(self._stream)
            except Exception as exc:  # CUDARuntimeError
                raise DeviceError(f"launch of {self._kernel.name!r} on {self._dev.id} failed: {exc}") from exc
            finally:
                self._lock.release()
            return
        self.enqueue()
        self._calm += 1
        if self._calm >= self.GRAPH_AFTER:
            self._calm = 0
            self._graph = graphs.one_kernel(self._dev, self)
            if self._graph is None:
                self._calm = self.NEVER  # capture is not possible here: stay with the driver call

    def enqueue(self, stream=None) -> None:
        """The driver call, on the device's stream or on ``stream`` (a cupy Stream)."""
        args = self._args if stream is None else (*self._args[:8], stream.ptr, *self._args[9:])
        try:
            if self._get_device() != self._index:
                with self._dev._cp_device:
                    self._call(*args)
            else:
                self._call(*args)
        except self._dev._cp.cuda.driver.CUDADriverError as exc:
            raise DeviceError(f"launch of {self._kernel.name!r} on {self._dev.id} failed: {exc}") from exc

    def refill(self, packed) -> None:
        """Write every argument and launch with the driver call, as one step under the lock
        (a scratch launch that several threads share)."""
        with self._lock:
            for cell, v in zip(self._cells, packed):
                cell[0] = 0 if v is None else v
            self.enqueue()

    def set(self, index: int, value) -> None:
        self._cells[index][0] = 0 if value is None else value  # None: an optional buffer left out
        self._graph = None
        if self._calm > 0:
            self._calm = 0
