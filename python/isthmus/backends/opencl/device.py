"""The OpenCL device: its properties, its context and queue (made on first use), events, host
memory; it holds its parts (memory.ClAllocator, compiler.ClCompiler, launch.ClLauncher)."""
from __future__ import annotations

import threading

import numpy as np

from ...device import Device, _TransferLane
from ...errors import DeviceError, OutOfMemoryError
from ...launch import GridLimits
from .compiler import ClCompiler
from .launch import ClLauncher
from .memory import ClAllocator

NAME = "opencl"
# PoCL's CPU scheduler numbers work-groups with 32-bit unsigned integers and aborts the process
# (an assertion) on a launch of more; no OpenCL query reports such a limit, so every OpenCL device
# gets it (2**32 work-groups is far beyond a real launch on any of them).
_MAX_GROUPS = 2**32 - 1
# NVIDIA's private (CUDA "local") memory per work-item; other vendors report no limit (PoCL reports
# 1024 bytes for every kernel, whatever its private arrays: it cannot be checked there).
_NVIDIA_PRIVATE_LIMIT = 512 * 1024
# Static local memory one work-group may declare on NVIDIA's OpenCL, by compute capability: it
# reports 48 KiB (CL_DEVICE_LOCAL_MEM_SIZE), but its compiler takes __local arrays up to the
# per-block maximum CUDA gives as opt-in shared memory (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability"), less a few bytes of its own that start every kernel's
# local memory (4 counted, arrays from 16 bytes in), and the runtime launches them. Measured on the
# H200 (sm_90, CUDA 13.0 driver): arrays of 57-200 KiB build and run, as many work-groups an SM as
# the size allows (3 of 64 KiB, 2 of 96, 1 of 196); one of 227 KiB is a build error, "uses too much
# shared data (0x38c04 bytes, 0x38c00 max)".
_NVIDIA_LOCAL_OPTIN_KIB = {80: 163, 86: 99, 87: 163, 89: 99, 90: 227, 100: 227, 103: 227, 120: 99, 121: 99}


def _kind(cl, d) -> str:
    t = d.type
    return "gpu" if t & cl.device_type.GPU else "cpu" if t & cl.device_type.CPU else "accelerator"


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
        dtypes = ["float32", "float16", "bfloat16", "int32", "int64", "uint8", "uint64"]
        if "cl_khr_fp64" in d.extensions or d.double_fp_config:
            dtypes.insert(1, "float64")
        super().__init__(
            index=index, name=d.name.strip(), vendor=d.vendor.strip(), kind=_kind(cl, d),
            memory=int(d.global_mem_size), compute_units=int(d.max_compute_units),
            max_work_group_size=int(d.max_work_group_size), max_work_item_sizes=tuple(d.max_work_item_sizes),
            local_mem_size=int(d.local_mem_size), driver_version=d.driver_version.strip(),
            platform=f"{platform.name.strip()} {platform.version.strip()}", dtypes=tuple(dtypes),
            allocator=ClAllocator(self), compiler=ClCompiler(self), launcher=ClLauncher(self, platform))
        self.max_alloc = int(d.max_mem_alloc_size)
        # size_t on the device is address_bits wide: wider sizes do not reach the driver
        self.grid_limits = GridLimits(index_bits=int(d.address_bits), max_groups=(_MAX_GROUPS,) * 3,
                                      max_total_groups=_MAX_GROUPS, runtime_picks_local=True)
        if "nvidia" in self.vendor.lower():
            self.private_mem_limit = _NVIDIA_PRIVATE_LIMIT
        self.native_vector_width_float = int(d.native_vector_width_float)  # SIMD width: tuning fallback by arch
        sm = _nvidia_sm(cl, d)
        self.mma_sync = sm >= 80  # NVIDIA's OpenCL takes inline PTX
        if sm in _NVIDIA_LOCAL_OPTIN_KIB:
            self.local_mem_optin = _NVIDIA_LOCAL_OPTIN_KIB[sm] * 1024
        self._ctx = self._queue = None
        self._init_lock = threading.Lock()

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

    def _synchronize(self):
        self._guard(self.queue.finish, "synchronize")

    def _record(self):
        return self._cl.enqueue_marker(self.queue)

    def _elapsed_ms(self, start, end) -> float:
        end.wait()
        return (end.profile.end - start.profile.end) * 1e-6

    def _empty_host(self, shape, dtype):
        cl = self._cl
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.empty(shape, dtype)
        mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
        # The mapped array keeps its buffer alive; unmapping happens when the array is collected.
        return cl.enqueue_map_buffer(self.queue, mem, cl.map_flags.READ | cl.map_flags.WRITE, 0, shape, dtype,
                                     is_blocking=True)[0]

    def _transfer_lane(self):
        # a second in-order command queue on the device's context (same device, same memory)
        return _TransferLane(self, self._cl.CommandQueue(self.context, self._dev), wait=lambda event: event.wait())

    def _guard(self, fn, what: str):
        cl = self._cl
        try:
            return fn()
        except cl.MemoryError as exc:
            raise OutOfMemoryError(f"{what} on {self.id}: {exc}") from exc
        except cl.Error as exc:
            raise DeviceError(f"{what} on {self.id} failed: {exc}") from exc
