"""isthmus: GPU kernels written once in OpenCL C, run through CuPy (CUDA) or PyOpenCL (any
OpenCL device), called from Python and from Java.

>>> import numpy as np, isthmus
>>> dev = isthmus.device()                      # ISTHMUS_DEVICE, else the best available
>>> x = dev.asarray(np.random.rand(1000).astype(np.float32))
>>> y = dev.zeros(1000, np.float32)
>>> isthmus.ops.axpy(2.0, x, y)                 # y = 2x + y on the device
>>> float(isthmus.ops.sum(y).to_numpy()[0])
"""
from typing import TYPE_CHECKING

from ._version import __version__
from .buffer import Buffer, live_buffers
from .device import Device, device, devices
from .errors import (BackendUnavailableError, ClosedBufferError, CompileError, DatabaseError, DeviceError,
                     FormatError, InvalidArgumentError, IsthmusError, LaunchConfigError, OutOfMemoryError,
                     UnsupportedDtypeError)
from .interop import asarray
from .kernel import Kernel
from .launch import LaunchConfig
from .fuse import fuse
from . import ops
if TYPE_CHECKING:  # a type checker sees isthmus.tune(...) as the function the callable module calls
    from .tune import tune
else:
    from . import tune  # callable: isthmus.tune(kernel, ...); isthmus.tune.db is the tuning database
from .tune import tuned_config as _tuned_config
from .backends import cuda as _cuda, opencl as _opencl
from .device import plugins as _plugins
from .ops import registry as _registry, resolve as _resolve

# the layers above core plugged into it (core imports none of them; see device.plugins)
_plugins.backends = (_cuda, _opencl)  # CUDA first: device() prefers it
_plugins.library = _registry.BoundOp
_plugins.fuse = fuse
_resolve.config_source.append(_tuned_config)  # the tuning database, opened on first use

__all__ = [
    "__version__", "Buffer", "Device", "Kernel", "LaunchConfig", "asarray", "device", "devices", "live_buffers",
    "fuse", "ops", "tune", "IsthmusError", "BackendUnavailableError", "ClosedBufferError", "CompileError", "DatabaseError",
    "DeviceError", "FormatError", "InvalidArgumentError", "LaunchConfigError", "OutOfMemoryError", "UnsupportedDtypeError",
]
