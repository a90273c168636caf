"""The CUDA device: its properties, its stream and events, peer copies. The other hooks are the
parts of their concern (memory, compiler, launch, graphs), mixed in."""
from __future__ import annotations

import threading

from ... import knobs
from ...device import Device
from ...launch import GridLimits
from .compiler import _Compiler
from .graphs import _Graphs
from .launch import _GRID_LIMITS, _Launch
from .memory import _Memory

NAME = "cuda"
_PRIVATE_LIMIT = 512 * 1024  # "local" memory per thread, CUDA's limit since compute capability 2.0
_ATTR_DEV_SMEM_OPTIN = 97  # cudaDevAttrMaxSharedMemoryPerBlockOptin


class CudaDevice(_Memory, _Compiler, _Launch, _Graphs, Device):
    backend = NAME
    pointers_are_addresses = True
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
            max_work_item_sizes=tuple(int(x) for x in p["maxThreadsDim"]), local_mem_size=int(p["sharedMemPerBlock"]),
            driver_version=f"{driver // 1000}.{driver % 1000 // 10}",
            platform=f"CUDA {rt.runtimeGetVersion()} sm_{self.compute_capability}",
            dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"))
        self._cp_device = cupy.cuda.Device(index)
        self.mma_sync = int(p["major"]) >= 8
        self.wgmma = self.compute_capability == "90"  # compiled for sm_90a (_Compiler._arch)
        self.local_mem_dynamic = True
        # dynamic shared memory a kernel may take once its limit is raised (Kernel.dynamic_local_bytes)
        self.local_mem_optin = int(p.get("sharedMemPerBlockOptin") or
                                   rt.deviceGetAttribute(_ATTR_DEV_SMEM_OPTIN, index) or p["sharedMemPerBlock"])
        self._stream = self._capture_stream = None  # made on first use (stream, _Graphs._capture_graph)
        self._init_lock = threading.Lock()
        self._capture_lock = threading.Lock()
        self._launch_graphs = knobs.cuda_launch_graphs()
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
