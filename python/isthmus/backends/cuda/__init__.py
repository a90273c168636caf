"""CUDA backend (CuPy): OpenCL C sources compiled by NVRTC behind ``opencl/cuda_prelude.h``.

Every call names its device and stream explicitly (CuPy keeps per-thread current-device and
current-stream state, and a thread Java started has neither set).

``device.py`` holds the device (its stream and events, views for CuPy and DLPack), which builds
its parts, one module each: ``memory.py`` (CudaAllocator: CuPy's pool, copies), ``compiler.py``
(CudaCompiler: NVRTC and modules), ``launch.py`` (CudaLauncher: packed arguments, the launch
memo, prepared launches); ``graphs.py`` captures and replays CUDA graphs.
"""
from __future__ import annotations

from ...errors import BackendUnavailableError
from .compiler import defines_as_source  # noqa: F401
from .device import NAME, CudaDevice  # noqa: F401
from . import graphs  # noqa: F401
from .launch import _NULL, CudaLauncher, _DevicePointer, _LaunchMemo, _PreparedLaunch  # noqa: F401


def discover() -> list["CudaDevice"]:
    try:
        import cupy
    except ImportError as exc:
        raise BackendUnavailableError(f"CuPy is not installed ({exc}); pip install cupy-cuda12x (CUDA 12 drivers) or "
                                      "cupy-cuda13x (CUDA 13)") from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver / no device
        raise BackendUnavailableError(f"CuPy found no CUDA device ({exc})") from exc
    if count == 0:
        raise BackendUnavailableError("CuPy found no CUDA device")
    return [CudaDevice(cupy, i) for i in range(count)]
