"""OpenCL backend (PyOpenCL): any OpenCL device — NVIDIA, AMD, Intel GPUs, PoCL on a CPU.

One context and one in-order, profiling-enabled queue per device; programs are built from source
with PyOpenCL's low-level ``_Program`` so that isthmus' own recipe-keyed cache is the only one.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import knobs
from ..buffer import Buffer
from ..device import Device
from ..errors import (BackendUnavailableError, ClosedBufferError, CompileError, DeviceError,
                      LaunchConfigError, OutOfMemoryError)
from ..launch import GridLimits, KernelLimits

NAME = "opencl"
# PoCL's CPU scheduler numbers work-groups with 32-bit unsigned integers and aborts the process
# (an assertion) on a launch of more; no OpenCL query reports such a limit, so every OpenCL device
# gets it (2**32 work-groups is far beyond a real launch on any of them).
_MAX_GROUPS = 2**32 - 1
# NVIDIA's private (CUDA "local") memory per work-item; other vendors report no limit (PoCL reports
# 1024 bytes for every kernel, whatever its private arrays: it cannot be checked there).
_NVIDIA_PRIVATE_LIMIT = 512 * 1024


def _cl():
    try:
        import pyopencl
    except ImportError as exc:
        raise BackendUnavailableError(f"PyOpenCL is not installed ({exc}); pip install pyopencl (what isthmus' "
                                      "opencl extra installs)") from exc
    return pyopencl


def discover() -> list["OpenCLDevice"]:
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:  # no ICD loader entries: PLATFORM_NOT_FOUND_KHR
        raise BackendUnavailableError(f"no OpenCL platform found ({exc}); for a CPU device install PoCL: apt-get "
                                      "install pocl-opencl-icd (Debian/Ubuntu) or pip install "
                                      "pocl-binary-distribution") from exc
    found = []
    for platform in platforms:
        try:
            devs = platform.get_devices()
        except cl.Error:
            continue
        for d in devs:
            found.append(OpenCLDevice(cl, platform, d, len(found)))
    if not found:
        raise BackendUnavailableError("OpenCL platforms report no devices")
    return found


class _Mem:
    """A cl.Buffer with its size; counts the device memory held until the last reference goes.
    It is also a buffer's packed launch argument (``_buffer_arg``): a launch on its way to the
    queue holds it, so the cl.Buffer goes back to the pool only after the launch is enqueued."""

    __slots__ = ("cl", "nbytes", "device")

    def __init__(self, mem, nbytes: int, device: "OpenCLDevice"):
        self.cl = mem
        self.nbytes = nbytes
        self.device = device
        device._account(nbytes)

    def __del__(self):
        try:
            self.device._release(self.cl, self.nbytes)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def _kind(cl, d) -> str:
    t = d.type
    if t & cl.device_type.GPU:
        return "gpu"
    if t & cl.device_type.CPU:
        return "cpu"
    return "accelerator"


def _nvidia_sm(cl, d) -> int:
    """The compute capability (major*10 + minor) of an NVIDIA OpenCL device, else 0."""
    if "cl_nv_device_attribute_query" not in d.extensions:
        return 0
    try:
        return int(d.compute_capability_major_nv) * 10 + int(d.compute_capability_minor_nv)
    except (cl.Error, AttributeError):
        return 0


class OpenCLDevice(Device):
    backend = NAME

    def __init__(self, cl, platform, d, index: int):
        self._cl = cl
        self._dev = d
        # 16-bit floats are stored and converted without `half` arithmetic (vload_half/vstore_half are
        # core OpenCL; bfloat16 is ushort bits), so every device has them, cl_khr_fp16 or not
        # (NVIDIA's OpenCL has no cl_khr_fp16).
        dtypes = ["float32", "float16", "bfloat16", "int32", "int64", "uint8"]
        if "cl_khr_fp64" in d.extensions or d.double_fp_config:
            dtypes.insert(1, "float64")
        super().__init__(
            index=index, name=d.name.strip(), vendor=d.vendor.strip(), kind=_kind(cl, d),
            memory=int(d.global_mem_size), compute_units=int(d.max_compute_units),
            max_work_group_size=int(d.max_work_group_size), max_work_item_sizes=tuple(d.max_work_item_sizes),
            local_mem_size=int(d.local_mem_size), driver_version=d.driver_version.strip(),
            platform=f"{platform.name.strip()} {platform.version.strip()}", dtypes=tuple(dtypes))
        self.max_alloc = int(d.max_mem_alloc_size)
        # size_t on the device is address_bits wide: wider sizes do not reach the driver
        self.grid_limits = GridLimits(index_bits=int(d.address_bits), max_groups=(_MAX_GROUPS,) * 3,
                                      max_total_groups=_MAX_GROUPS, runtime_picks_local=True)
        if "nvidia" in self.vendor.lower():
            self.private_mem_limit = _NVIDIA_PRIVATE_LIMIT
        self.native_vector_width_float = int(d.native_vector_width_float)  # SIMD width: tuning fallback by arch
        self.mma_sync = _nvidia_sm(cl, d) >= 80  # NVIDIA's OpenCL takes inline PTX
        self._ctx = None
        self._queue = None
        self._init_lock = threading.Lock()
        self._in_use = 0
        # Re-entrant: _Mem.__del__ takes it, and a garbage collection can run that finalizer while this
        # thread already holds the lock (inside _alloc/_release): with a plain Lock the process hangs.
        self._in_use_lock = threading.RLock()
        # A caching allocator like CuPy's: freed buffers are kept by size and handed out again. On an
        # in-order queue that is safe: work on the old owner was enqueued before any on the new one.
        self._pool: dict[int, list] = {}
        self._pooled = 0
        self._pool_limit = None

    # The context is made on first use, not at discovery: listing devices stays cheap.
    @property
    def queue(self):
        if self._queue is None:
            with self._init_lock:
                if self._queue is None:
                    cl = self._cl
                    self._ctx = cl.Context([self._dev])
                    self._queue = cl.CommandQueue(self._ctx, self._dev,
                                                  properties=cl.command_queue_properties.PROFILING_ENABLE)
        return self._queue

    @property
    def context(self):
        self.queue
        return self._ctx

    # ---- memory ------------------------------------------------------------------------------
    def _alloc(self, nbytes: int):
        cl = self._cl
        if nbytes > self.max_alloc:
            raise OutOfMemoryError(f"{nbytes} bytes exceed the largest allocation {self.id} allows "
                                   f"({self.max_alloc} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        reused = None
        with self._in_use_lock:
            free = self._pool.get(nbytes)
            if free:
                self._pooled -= nbytes
                reused = free.pop()  # the most recently freed: likeliest still in the device's caches
                if not free:
                    del self._pool[nbytes]  # a size cached again goes to the back of the eviction order
        if reused is not None:
            return _Mem(reused, nbytes, self)
        try:
            try:
                mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
            except cl.MemoryError:
                self._free_pool()
                mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.MemoryError as exc:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {self.id}: {exc}") from exc
        except cl.Error as exc:
            raise DeviceError(f"allocation of {nbytes} bytes on {self.id} failed: {exc}") from exc
        return _Mem(mem, nbytes, self)

    def _account(self, delta: int) -> None:
        with self._in_use_lock:
            self._in_use += delta

    def _release(self, mem, nbytes: int) -> None:
        """Count ``mem`` freed and cache it for the next allocation of its size. A full cache makes
        room by dropping its oldest buffers (sizes in the order they were cached, each size's
        buffers oldest first), not the one just freed: the newest is the likeliest to be asked for
        again, and handing a buffer back to the driver while kernels that use it are queued can make
        the host wait for them. The dropped buffers go back to the driver when this returns, outside
        the lock."""
        evicted = []
        with self._in_use_lock:
            self._in_use -= nbytes
            limit = self._pool_limit
            if limit is None:
                limit = self._pool_limit = knobs.opencl_pool_bytes()  # read once: a release is on the hot path
            if nbytes > limit:
                return
            pool = self._pool
            while pool and self._pooled + nbytes > limit:
                size = next(iter(pool))
                oldest = pool[size]
                evicted.append(oldest.pop(0))
                self._pooled -= size
                if not oldest:
                    del pool[size]
            pool.setdefault(nbytes, []).append(mem)
            self._pooled += nbytes

    def _free_pool(self) -> None:
        with self._in_use_lock:
            cached, self._pool = self._pool, {}
            self._pooled = 0
        cached.clear()  # released to the driver outside the lock

    def _memory_in_use(self) -> int:
        return self._in_use

    def _pointer(self, mem) -> int:
        return mem.cl.int_ptr

    def _upload(self, mem, host):
        self._guard(lambda: self._cl.enqueue_copy(self.queue, mem.cl, host, is_blocking=True), "host->device copy")

    def _download(self, mem, host):
        self._guard(lambda: self._cl.enqueue_copy(self.queue, host, mem.cl, is_blocking=True), "device->host copy")

    def _copy(self, dst, src, nbytes):
        self._guard(lambda: self._cl.enqueue_copy(self.queue, dst.cl, src.cl, byte_count=nbytes), "device copy")

    def _zero(self, mem, nbytes):
        self._guard(lambda: self._cl.enqueue_fill_buffer(self.queue, mem.cl, np.uint8(0), 0, nbytes), "fill")

    def _empty_host(self, shape, dtype):
        cl = self._cl
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.empty(shape, dtype)
        mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
        # The mapped array keeps its buffer alive; unmapping happens when the array is collected.
        array, _ = cl.enqueue_map_buffer(self.queue, mem, cl.map_flags.READ | cl.map_flags.WRITE, 0, shape, dtype,
                                         is_blocking=True)
        return array

    def _synchronize(self):
        self._guard(self.queue.finish, "synchronize")

    def _record(self):
        return self._cl.enqueue_marker(self.queue)

    def _elapsed_ms(self, start, end) -> float:
        end.wait()
        return (end.profile.end - start.profile.end) * 1e-6

    def _guard(self, fn, what: str):
        cl = self._cl
        try:
            return fn()
        except cl.MemoryError as exc:
            raise OutOfMemoryError(f"{what} on {self.id}: {exc}") from exc
        except cl.Error as exc:
            raise DeviceError(f"{what} on {self.id} failed: {exc}") from exc

    # ---- programs ----------------------------------------------------------------------------
    def _prepare_source(self, source: str) -> str:
        return source

    def _compiler_id(self) -> dict:
        return {"pyopencl": self._cl.VERSION_TEXT, "device_version": self._dev.version,
                "opencl_c": getattr(self._dev, "opencl_c_version", "")}

    def _build(self, source: str, options: list[str], name: str):
        cl = self._cl
        prg = cl._cl._Program(self.context, source)
        try:
            prg.build(" ".join(options).encode(), [self._dev])
        except cl.Error as exc:
            try:
                log = prg.get_build_info(self._dev, cl.program_build_info.LOG)
            except cl.Error:
                log = str(exc)
            raise CompileError(f"kernel {name!r} failed to compile for {self.id} ({self.name})",
                               log=log or str(exc), kernel_name=name) from None
        return prg

    def _binary(self, native) -> bytes | None:
        binaries = native.get_info(self._cl.program_info.BINARIES)
        return bytes(binaries[0]) if binaries and binaries[0] else None

    def _load_binary(self, binary: bytes, options: list[str]):
        prg = self._cl._cl._Program(self.context, [self._dev], [binary])
        prg.build(" ".join(options).encode(), [self._dev])
        return prg

    def _function(self, native, name: str):
        cl = self._cl
        try:
            return cl.Kernel(native, name)
        except cl.Error as exc:
            raise CompileError(f"program has no kernel {name!r}: {exc}", kernel_name=name) from None

    def _kernel_limits(self, kernel) -> KernelLimits:
        cl = self._cl
        info = cl.kernel_work_group_info
        native, d = kernel.native, self._dev
        try:
            return KernelLimits(int(native.get_work_group_info(info.WORK_GROUP_SIZE, d)),
                                int(native.get_work_group_info(info.LOCAL_MEM_SIZE, d)),
                                int(native.get_work_group_info(info.PRIVATE_MEM_SIZE, d)))
        except cl.Error:  # a driver that does not answer: the device's limits, and the driver's refusal
            return KernelLimits(self.max_work_group_size, 0, None)

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
        """The memory object a packed buffer argument holds (what a Plan keeps)."""
        return packed

    def _native_arg(self, packed):
        """A packed argument as PyOpenCL takes it (for calls that bypass isthmus: benchmarks)."""
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
        _set_arg(self._native, index, value)


def _set_arg(native, index: int, value) -> None:
    """One kernel argument: a buffer (a _Mem: its cl.Buffer) or None (a zero-size buffer) through
    set_arg; anything else is a NumPy scalar of the declared type (kernel.py converts every scalar),
    set as its raw bytes, which is what PyOpenCL's generated argument setters call (set_arg's
    generic dispatch costs ~100x more on PoCL)."""
    if value.__class__ is _Mem:
        native.set_arg(index, value.cl)
    elif value is None:
        native.set_arg(index, None)
    else:
        native._set_arg_buf(index, value)
