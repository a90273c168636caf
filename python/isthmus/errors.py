"""The isthmus error hierarchy. The Java API mirrors it one to one (io.isthmus.*Exception)."""
from __future__ import annotations


class IsthmusError(Exception):
    """Base class of every error isthmus raises on purpose."""


class BackendUnavailableError(IsthmusError):
    """No usable backend (CuPy or PyOpenCL), or the requested device does not exist."""


class InvalidArgumentError(IsthmusError, ValueError):
    """An argument is wrong: shape, size, count, value range, device or type."""


class UnsupportedDtypeError(InvalidArgumentError, TypeError):
    """The dtype is not supported by isthmus, by this kernel or by this device."""


class LaunchConfigError(InvalidArgumentError):
    """A launch configuration the device cannot run (sizes, limits, divisibility)."""


class ClosedBufferError(IsthmusError):
    """A buffer was used after close()."""


class OutOfMemoryError(IsthmusError, MemoryError):
    """The device could not allocate the requested memory."""


class DeviceError(IsthmusError):
    """The driver or runtime failed while running work on the device."""


class CompileError(IsthmusError):
    """A kernel failed to compile. ``log`` holds the compiler's build log."""

    def __init__(self, message: str, *, log: str = "", kernel_name: str = ""):
        self.log = log
        self.kernel_name = kernel_name
        super().__init__(message + (f"\n--- build log ---\n{log.strip()}" if log.strip() else ""))


class DatabaseError(IsthmusError):
    """A tuning database or an exported tuning file is invalid."""


class FormatError(InvalidArgumentError):
    """A file is not in the format it should be (a damaged safetensors checkpoint, its index):
    the message names the file, the part and what was wrong."""
