"""How a Python class becomes an SPI implementation: :func:`implements` declares the Java
interface (and records it for the completeness test) and wraps each public method with :func:`spi`,
so a Python exception reaches Java as the matching ``io.isthmus.*Exception`` with the Python type,
message and traceback (a bare Python exception would reach Java without its message). Java
exceptions pass through unchanged. Python-side helpers of such a class are underscored."""
from __future__ import annotations

import functools
import inspect
import operator
import traceback
from typing import Callable

import jpype

# Java interface name -> the Python classes implementing it.
IMPLEMENTATIONS: dict[str, list[type]] = {}

# Python error class name -> Java exception class, looked up along the MRO: isthmus' XError is
# io.isthmus.XException (but OutOfMemoryError); TypeError and ValueError, not raised on purpose by
# isthmus, are bad input all the same.
_JAVA_ERRORS = {name: f"io.isthmus.{name.removesuffix('Error')}Exception" for name in (
    "CompileError", "LaunchConfigError", "UnsupportedDtypeError", "InvalidArgumentError", "ClosedBufferError",
    "DeviceError", "BackendUnavailableError", "DatabaseError", "IsthmusError")}
_JAVA_ERRORS.update(OutOfMemoryError="io.isthmus.OutOfDeviceMemoryException",
                    TypeError="io.isthmus.InvalidArgumentException", ValueError="io.isthmus.InvalidArgumentException")
_JAVA_ERRORS["FormatError"] = "io.isthmus.FormatException"


def java_error(exc: BaseException):
    """The Java exception for a Python one, with the Python type, message and traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    pytype = f"{type(exc).__module__}.{type(exc).__qualname__}"
    name = next((_JAVA_ERRORS[c.__name__] for c in type(exc).__mro__ if c.__name__ in _JAVA_ERRORS),
                "io.isthmus.IsthmusException")
    message = str(exc) or type(exc).__name__
    cls = jpype.JClass(name)
    if name == "io.isthmus.CompileException":
        return cls(message, pytype, text, getattr(exc, "log", "") or "", getattr(exc, "kernel_name", None) or None)
    return cls(message, pytype, text)


def spi(fn):
    """Map every Python exception leaving an SPI method to its Java exception."""
    @functools.wraps(fn)
    def call(*args):
        try:
            return fn(*args)
        except jpype.JException:
            raise
        except Exception as exc:  # noqa: BLE001 - every error must reach Java with its message
            raise java_error(exc) from None
    call.__isthmus_spi__ = True
    return jpype.JOverride(call)


def reads(path: str, convert: Callable | None = None):
    """An SPI method that answers with an attribute of what the handle wraps: ``path`` is dotted
    from the handle (``"device.name"``), ``convert`` makes the value what Java expects."""
    get = operator.attrgetter(path)

    def method(self):
        return get(self) if convert is None else convert(get(self))
    return method


def implements(interface: str):
    """Class decorator: ``cls`` implements the Java ``interface`` (checked at its first instance),
    each of its public methods through :func:`spi`."""
    def declare(cls):
        for name, fn in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(fn):
                setattr(cls, name, spi(fn))
        proxy = jpype.JImplements(interface, deferred=True)(cls)
        IMPLEMENTATIONS.setdefault(interface, []).append(proxy)
        return proxy
    return declare
