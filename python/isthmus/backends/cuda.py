"""CUDA backend (CuPy): OpenCL C sources compiled by NVRTC behind ``opencl/cuda_prelude.h``.

Every call names its device and stream explicitly (CuPy keeps per-thread current-device and
current-stream state, and a thread Java started has neither set).
"""
from __future__ import annotations

import ctypes
import os
import threading
import warnings

import numpy as np

from .. import knobs
from ..buffer import Buffer
from ..device import Device
from ..errors import (BackendUnavailableError, ClosedBufferError, CompileError, DeviceError,
                      LaunchConfigError, OutOfMemoryError)
from ..launch import GridLimits, KernelLimits

NAME = "cuda"
_GRID_LIMITS = (2**31 - 1, 65535, 65535)
_PRIVATE_LIMIT = 512 * 1024  # "local" memory per thread, CUDA's limit since compute capability 2.0
# CUfunction_attribute values (cuda.h)
_ATTR_MAX_THREADS, _ATTR_SHARED_BYTES, _ATTR_LOCAL_BYTES = 0, 1, 3
_ATTR_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_ATTR_DEV_SMEM_OPTIN = 97  # cudaDevAttrMaxSharedMemoryPerBlockOptin


def _cupy():
    try:
        import cupy
    except ImportError as exc:
        raise BackendUnavailableError(f"CuPy is not installed ({exc}); pip install cupy-cuda12x (CUDA 12 drivers) or "
                                      "cupy-cuda13x (CUDA 13)") from exc
    return cupy


def discover() -> list["CudaDevice"]:
    cupy = _cupy()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver / no device
        raise BackendUnavailableError(f"CuPy found no CUDA device ({exc})") from exc
    if count == 0:
        raise BackendUnavailableError("CuPy found no CUDA device")
    return [CudaDevice(cupy, i) for i in range(count)]


def defines_as_source(options: list[str]) -> str:
    """``-DNAME=value`` options as ``#define`` lines. NVRTC applies -D before its built-in header,
    whose templates use names such as T, so defines must go into the source instead."""
    lines = []
    for o in options:
        name, _, value = o[2:].partition("=")
        lines.append(f"#define {name} {value}\n")
    return "".join(lines)


def _local_for(gsize: tuple[int, ...], max_wg: int) -> tuple[int, ...]:
    """A block shape that divides the grid: per dimension the largest divisor under a cap."""
    caps = {1: (256,), 2: (32, 8), 3: (16, 8, 4)}[len(gsize)]
    out = []
    for g, cap in zip(gsize, caps):
        best = 1
        for d in range(min(g, cap), 0, -1):
            if g % d == 0:
                best = d
                break
        out.append(best)
    return tuple(out)


class CudaDevice(Device):
    backend = NAME
    # the prelude's get_global_id is a 64-bit size_t; isthmus picks the block of a launch without a
    # local size and _grid checks the grid it makes
    grid_limits = GridLimits(index_bits=64, max_groups=_GRID_LIMITS, max_total_groups=2**63 - 1,
                             runtime_picks_local=False)
    private_mem_limit = _PRIVATE_LIMIT

    def __init__(self, cupy, index: int):
        self._cp = cupy
        rt = cupy.cuda.runtime
        p = rt.getDeviceProperties(index)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        driver = rt.driverGetVersion()
        self.compute_capability = f"{p['major']}{p['minor']}"
        super().__init__(
            index=index, name=name, vendor="NVIDIA Corporation", kind="gpu", memory=int(p["totalGlobalMem"]),
            compute_units=int(p["multiProcessorCount"]), max_work_group_size=int(p["maxThreadsPerBlock"]),
            max_work_item_sizes=tuple(int(x) for x in p["maxThreadsDim"]),
            local_mem_size=int(p["sharedMemPerBlock"]),
            driver_version=f"{driver // 1000}.{driver % 1000 // 10}",
            platform=f"CUDA {rt.runtimeGetVersion()} sm_{self.compute_capability}",
            dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"))
        self._cp_device = cupy.cuda.Device(index)
        self.mma_sync = int(p["major"]) >= 8
        # dynamic shared memory a kernel may take once its limit is raised (Kernel.dynamic_local_bytes)
        self.local_mem_optin = int(p.get("sharedMemPerBlockOptin") or
                                   rt.deviceGetAttribute(_ATTR_DEV_SMEM_OPTIN, index) or p["sharedMemPerBlock"])
        self._stream = None
        self._init_lock = threading.Lock()
        self._launch_graphs = knobs.cuda_launch_graphs()
        self._capture_stream = None
        self._capture_lock = threading.Lock()
        self._get_device = cupy.cuda.runtime.getDevice
        self._current_stream = cupy.cuda.get_current_stream
        self._cp_alloc = cupy.cuda.alloc

    @property
    def stream(self):
        """The stream all isthmus work on this device is queued on (blocking with respect to the
        legacy default stream, so CuPy code on the default stream sees isthmus results in order)."""
        if self._stream is None:
            with self._init_lock:
                if self._stream is None:
                    with self._cp_device:
                        self._stream = self._cp.cuda.Stream(non_blocking=False)
        return self._stream

    def _current(self):
        return self._cp_device

    def _capture_graph(self, steps) -> object:
        """A CUDA graph of ``steps`` (callables taking the stream to queue on), captured on a private
        stream, so work other threads queue on :attr:`stream` meanwhile is not captured, in relaxed
        mode, so their allocations and synchronizations stay legal. Raises what the capture raised."""
        cp = self._cp
        with self._capture_lock, self._cp_device:
            if self._capture_stream is None:
                self._capture_stream = cp.cuda.Stream(non_blocking=True)
            cs = self._capture_stream
            cs.begin_capture(mode=getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", 2))
            graph = None
            try:
                for step in steps:
                    step(cs)
            finally:
                graph = cs.end_capture()
            upload = getattr(graph, "upload", None)
            if upload is not None:
                upload(self.stream)  # instantiate now, not on the first replay
        return graph

    def _graph(self, steps: tuple) -> "_Graph":
        """A captured isthmus Graph's steps as one instantiated CUDA graph (see _capture_graph)."""
        return _Graph(self, self._capture_graph(steps) if steps else None)

    def _one_kernel_graph(self, prepared: "_PreparedLaunch"):
        """The CUDA graph of one prepared launch, or None (with a warning, once) where capture fails."""
        if not self._launch_graphs:  # failed before (or turned off): do not try again
            return None
        try:
            return self._capture_graph((prepared.enqueue,))
        except Exception as exc:  # noqa: BLE001 - the driver call works: stay with it, and say so once
            self._launch_graphs = False
            warnings.warn(f"{self.id}: capturing a repeated launch as a CUDA graph failed ({exc}); repeated "
                          f"launches stay driver calls", RuntimeWarning, stacklevel=3)
            return None

    # ---- memory ------------------------------------------------------------------------------
    def _alloc(self, nbytes: int):
        cp = self._cp
        try:
            # CuPy's pool reuses a freed block on the stream it was allocated on. The legacy default
            # stream synchronizes with this device's (blocking) stream both ways, so a block tied to
            # it is safe; any other current stream of the calling thread (a user's stream, the
            # per-thread default stream) is not, and the allocation is tied to ours instead.
            if self._get_device() == self.index:
                if self._current_stream().ptr == 0:
                    return self._cp_alloc(nbytes)
                with self.stream:
                    return self._cp_alloc(nbytes)
            with self._cp_device, self.stream:
                return self._cp_alloc(nbytes)
        except cp.cuda.memory.OutOfMemoryError as exc:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {self.id}: {exc}") from exc

    def _free_pool(self) -> None:
        with self._cp_device:
            self._cp.get_default_memory_pool().free_all_blocks()

    def _memory_in_use(self) -> int:
        with self._cp_device:
            return self._cp.get_default_memory_pool().used_bytes()

    def _pointer(self, mem) -> int:
        return int(mem.ptr)

    def _guard(self, fn, what: str):
        cp = self._cp
        try:
            with self._cp_device:
                return fn()
        except cp.cuda.memory.OutOfMemoryError as exc:
            raise OutOfMemoryError(f"{what} on {self.id}: {exc}") from exc
        except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as exc:
            raise DeviceError(f"{what} on {self.id} failed: {exc}") from exc

    def _upload(self, mem, host):
        def run():
            mem.copy_from_host_async(host.ctypes.data, host.nbytes, self.stream)
            self.stream.synchronize()  # the host array may be freed as soon as we return
        self._guard(run, "host->device copy")

    def _download(self, mem, host):
        def run():
            mem.copy_to_host_async(host.ctypes.data, host.nbytes, self.stream)
            self.stream.synchronize()
        self._guard(run, "device->host copy")

    def _copy(self, dst, src, nbytes, stream=None):
        self._guard(lambda: dst.copy_from_device_async(src, nbytes, stream or self.stream), "device copy")

    def _peer_copy(self, dst, src, src_dev, nbytes) -> bool:
        """Copy from memory on another CUDA device: a peer copy where the GPUs allow it."""
        if not isinstance(src_dev, CudaDevice):
            return False

        def run():
            src_dev.stream.synchronize()  # the source's producer must be done
            self._cp.cuda.runtime.memcpyPeerAsync(dst.ptr, self.index, src.ptr, src_dev.index, nbytes,
                                                  self.stream.ptr)
        self._guard(run, "peer copy")
        return True

    def _zero(self, mem, nbytes, stream=None):
        self._guard(lambda: mem.memset_async(0, nbytes, stream or self.stream), "fill")

    def _empty_host(self, shape, dtype):
        import cupyx

        with self._cp_device:
            return cupyx.empty_pinned(shape, dtype)

    def _synchronize(self):
        self._guard(self.stream.synchronize, "synchronize")

    def _record(self):
        with self._cp_device:
            event = self._cp.cuda.Event()
            event.record(self.stream)
        return event

    def _elapsed_ms(self, start, end) -> float:
        end.synchronize()
        return self._cp.cuda.get_elapsed_time(start, end)

    def _cupy_view(self, buf):
        with self._cp_device:
            return self._cp.ndarray(buf.shape, buf.dtype, memptr=buf._handle())

    def _dlpack(self, buf, stream):
        return self._cupy_view(buf).__dlpack__(stream=stream)

    def _dlpack_device(self) -> tuple:
        return (2, self.index)  # kDLCUDA

    def _array_interface(self, buf) -> dict:
        return {"shape": buf.shape, "typestr": buf.dtype.str, "descr": [("", buf.dtype.str)],
                "data": (buf._ptr, False), "strides": None, "version": 3, "stream": self.stream.ptr or 1}

    # ---- programs ----------------------------------------------------------------------------
    def _prepare_source(self, source: str) -> str:
        prelude = (knobs.kernel_dir() / "cuda_prelude.h").read_text()
        return prelude + "\n#line 1\n" + source

    def _compiler_id(self) -> dict:
        from cupy_backends.cuda.libs import nvrtc

        return {"cupy": self._cp.__version__, "nvrtc": list(nvrtc.getVersion()), "arch": f"sm_{self.compute_capability}"}

    def _include_dirs(self) -> list[str]:
        cp = self._cp
        dirs = []
        base = os.path.join(os.path.dirname(cp.__file__), "_core", "include")
        for d in (base, os.path.join(base, "cupy", "_cuda", f"cuda-{cp.cuda.runtime.runtimeGetVersion() // 1000}")):
            if os.path.isdir(d):
                dirs.append(d)
        cuda_path = cp.cuda.get_cuda_path()
        if cuda_path and os.path.isdir(os.path.join(cuda_path, "include")):
            dirs.append(os.path.join(cuda_path, "include"))
        return dirs

    def _nvrtc_options(self) -> list[str]:
        return [f"-arch=sm_{self.compute_capability}", "-std=c++17", "-default-device",
                *(f"-I{d}" for d in self._include_dirs())]

    def _build(self, source: str, options: list[str], name: str):
        from cupy_backends.cuda.libs import nvrtc

        source = defines_as_source(options) + source
        opts = self._nvrtc_options()
        prog = nvrtc.createProgram(source, f"{name or 'isthmus'}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(prog, opts)
            except nvrtc.NVRTCError as exc:
                log = nvrtc.getProgramLog(prog)
                raise CompileError(f"kernel {name!r} failed to compile for {self.id} ({self.name}) with NVRTC: {exc}",
                                   log=log, kernel_name=name) from None
            cubin = nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)
        return self._load_binary(cubin, options)

    def _binary(self, native) -> bytes | None:
        return native[1]

    def _load_binary(self, binary: bytes, options: list[str]):
        cp = self._cp
        with self._cp_device:
            module = cp.cuda.function.Module()
            module.load(bytes(binary))
        return module, bytes(binary)

    def _function(self, native, name: str):
        cp = self._cp
        try:
            with self._cp_device:
                return native[0].get_function(name)
        except cp.cuda.driver.CUDADriverError as exc:
            raise CompileError(f"program has no kernel {name!r}: {exc}", kernel_name=name) from None

    def _kernel_limits(self, kernel) -> KernelLimits:
        get = self._cp.cuda.driver.funcGetAttribute
        ptr = kernel.native.ptr
        with self._cp_device:
            return KernelLimits(int(get(_ATTR_MAX_THREADS, ptr)), int(get(_ATTR_SHARED_BYTES, ptr)),
                                int(get(_ATTR_LOCAL_BYTES, ptr)))

    def _dynamic_shared(self, kernel) -> int:
        """The dynamic shared memory bytes of ``kernel``'s launches; above the default 48 KiB the
        driver must first raise the kernel's limit (once per kernel and size)."""
        dyn = int(getattr(kernel, "dynamic_local_bytes", 0) or 0)
        if not dyn:
            return 0
        if dyn > self.local_mem_optin:
            raise LaunchConfigError(f"kernel {kernel.name!r} asks for {dyn} bytes of dynamic shared memory; "
                                    f"{self.id} allows at most {self.local_mem_optin}: use a smaller tile or fewer stages")
        if dyn > self.local_mem_size and kernel.__dict__.get("_cuda_dyn_limit", 0) < dyn:
            try:
                with self._cp_device:
                    self._cp.cuda.driver.funcSetAttribute(kernel.native.ptr, _ATTR_MAX_DYNAMIC_SHARED, dyn)
            except self._cp.cuda.driver.CUDADriverError as exc:
                raise LaunchConfigError(f"kernel {kernel.name!r}: raising its dynamic shared memory to {dyn} bytes "
                                        f"failed on {self.id}: {exc}") from exc
            kernel.__dict__["_cuda_dyn_limit"] = dyn
        return dyn

    def _buffer_arg(self, buf):
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

    def _memory_of(self, packed):
        """The memory object a packed buffer argument holds (what a Plan keeps)."""
        return getattr(packed, "mem", None)

    def _native_arg(self, packed):
        """A packed argument as CuPy takes it (for calls that bypass isthmus: benchmarks)."""
        return np.uint64(packed) if packed.__class__ is _DevicePointer else packed

    def _direct_call(self, kernel, gsize, lsize, args: list) -> tuple:
        from ..program import _options

        src = defines_as_source(_options(kernel.program.defines)) + self._prepare_source(kernel.program.source)
        raw = self._cp.RawKernel(src, kernel.name, options=tuple(self._nvrtc_options()))
        return raw, (tuple(a // b for a, b in zip(gsize, lsize)), lsize, args), {"stream": self.stream}

    def _vendor_call(self, make, buffers: list):
        fn = make([self._cupy_view(b) for b in buffers])

        def run():
            with self._cp_device, self.stream:
                fn()
        return run

    def _grid(self, kernel, gsize, lsize) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(blocks per grid, threads per block) for OpenCL-style global/local sizes."""
        if lsize is None:
            lsize = _local_for(gsize, self.max_work_group_size)
        grid = tuple(g // l for g, l in zip(gsize, lsize))
        for i, n in enumerate(grid):
            if n > _GRID_LIMITS[i]:
                raise LaunchConfigError(f"launch of {kernel.name!r}: {n} work-groups in dimension {i} exceed CUDA's "
                                        f"limit of {_GRID_LIMITS[i]}")
        return grid, tuple(lsize)

    def _prepare(self, kernel, gsize, lsize, packed):
        """A prepared launch (plan.py): the driver's parameter block packed once."""
        return _PreparedLaunch(self, kernel, gsize, lsize, packed)

    def _launch(self, kernel, gsize, lsize, args):
        # Device._pack's pass, inline (this is the hot path of every call: a frame less), then the
        # launch key. Packed buffers are _DevicePointer ints, so hashing the key and comparing it
        # with a remembered one (plain ints) stays in C.
        types = kernel._types
        for i, v in enumerate(args):
            c = v.__class__
            if c is Buffer:
                args[i] = v._arg or v._launch_arg()
            elif c is not types[i] and types[i] is not None:
                args[i] = kernel._convert(i, v)
        # A launch seen again (same grid, same argument values) replays its own prepared launch
        # (driver parameter block packed once; after three replays a one-kernel graph). A launch
        # not seen recently refills the grid's scratch parameter block in place, which costs far
        # less than preparing a launch that may never come back.
        key = (gsize, lsize, *args)
        memo = kernel._launch_memo
        if memo is None:
            memo = kernel._launch_memo = _LaunchMemo()
        prepared = memo.prepared.get(key)
        if prepared is not None:
            prepared.launch()
            return
        # Launches seen once are remembered by their key's hash (a collision only prepares a launch
        # early), prepared ones by plain pointer values: the memo never holds a buffer's memory.
        seen = hash(key)
        if seen in memo.seen:  # the second sighting: keep it prepared
            memo.seen.discard(seen)
            if len(memo.prepared) >= memo.PREPARED_MAX:
                memo.prepared.clear()
            prepared = memo.prepared[_plain(key)] = self._prepare(kernel, gsize, lsize, args)
            prepared.launch()
            return
        if len(memo.seen) >= memo.SEEN_MAX:
            memo.seen.clear()
        memo.seen.add(seen)
        scratch = memo.scratch.get((gsize, lsize))
        if scratch is None:
            if len(memo.scratch) >= memo.SCRATCH_MAX:
                memo.scratch.clear()
            scratch = memo.scratch[(gsize, lsize)] = self._prepare(kernel, gsize, lsize, args)
            scratch._calm = _PreparedLaunch.NEVER  # refilled at every use: never a graph
        scratch.refill(args)


class _Graph:
    """An instantiated CUDA graph replayed on the device's stream with one call."""

    __slots__ = ("_dev", "_native")

    def __init__(self, dev: CudaDevice, native):
        self._dev, self._native = dev, native

    def launch(self) -> None:
        dev, native = self._dev, self._native
        if native is None:  # a capture that recorded nothing
            return
        try:
            if dev._get_device() != dev.index:
                with dev._cp_device:
                    native.launch(dev.stream)
            else:
                native.launch(dev.stream)
        except Exception as exc:  # CUDARuntimeError
            raise DeviceError(f"graph launch on {dev.id} failed: {exc}") from exc


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
    """What CudaDevice._launch remembers of one kernel's launches: prepared launches by launch key
    (grid and packed arguments), the hashes of launch keys seen once, and one scratch launch per
    grid; each is emptied when it reaches its bound."""

    PREPARED_MAX, SEEN_MAX, SCRATCH_MAX = 64, 256, 16
    __slots__ = ("prepared", "seen", "scratch")

    def __init__(self):
        self.prepared: dict = {}
        self.seen: set = set()
        self.scratch: dict = {}


class _PreparedLaunch:
    """cuLaunchKernel with a parameter block packed once: ``kernelParams`` is an array of pointers,
    one per argument, each to a one-element NumPy array holding the value (a device pointer as
    uint64 or the scalar in its declared type). Rebinding writes into that array in place, so the
    pointer block never changes; both live as long as this object.

    A launch repeated ``GRAPH_AFTER`` times with no rebinding in between becomes a one-kernel CUDA
    graph (captured once on the device's private capture stream, see
    :meth:`CudaDevice._one_kernel_graph`): replaying it costs the host about a third of the driver
    call (benchmarks/cuda_launch_paths.py). A rebind drops the graph; the launch goes back to the
    driver call until it repeats again. ``enqueue(stream)`` is always the driver call (what a
    stream capture of a whole isthmus Graph records)."""

    GRAPH_AFTER = 3
    NEVER = -(1 << 62)  # a _calm that never counts up to GRAPH_AFTER: this launch stays a driver call

    __slots__ = ("_dev", "_kernel", "_cells", "_params", "_args", "_call", "_get_device", "_index", "_graph",
                 "_calm", "_lock", "_stream")

    def __init__(self, dev: CudaDevice, kernel, gsize, lsize, packed):
        grid, block = dev._grid(kernel, gsize, lsize)
        grid, block = (grid + (1, 1))[:3], (block + (1, 1))[:3]
        self._dev = dev
        self._kernel = kernel
        self._cells = [np.array([v], dtype=np.uint64 if v.__class__ is _DevicePointer else np.asarray(v).dtype)
                       for v in packed]
        self._params = (ctypes.c_void_p * max(1, len(packed)))(*[c.ctypes.data for c in self._cells])
        self._stream = dev.stream
        dyn = dev._dynamic_shared(kernel) if getattr(kernel, "dynamic_local_bytes", 0) else 0
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
            self._graph = self._dev._one_kernel_graph(self)
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
                cell[0] = v
            self.enqueue()

    def set(self, index: int, value) -> None:
        self._cells[index][0] = value
        self._graph = None
        if self._calm > 0:
            self._calm = 0
