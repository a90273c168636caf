"""OpenCL backend (PyOpenCL): any OpenCL device — NVIDIA, AMD, Intel GPUs, PoCL on a CPU.

One context and one in-order, profiling-enabled queue per device; programs are built from source
with PyOpenCL's low-level ``_Program`` so that isthmus' own recipe-keyed cache is the only one.

``device.py`` holds the device (its context and queue, events, host memory), which builds its
parts, one module each: ``memory.py`` (ClAllocator: buffers and their cache), ``compiler.py``
(ClCompiler: programs), ``launch.py`` (ClLauncher: arguments set on the kernel object, the
enqueue, prepared launches).
"""
from __future__ import annotations

from ...errors import BackendUnavailableError
from .device import NAME, OpenCLDevice  # noqa: F401
from .launch import ClLauncher, _PreparedLaunch  # noqa: F401
from .memory import _Mem  # noqa: F401


def discover() -> list["OpenCLDevice"]:
    try:
        import pyopencl as cl
    except ImportError as exc:
        raise BackendUnavailableError(f"PyOpenCL is not installed ({exc}); pip install pyopencl (what isthmus' "
                                      "opencl extra installs)") from exc
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
