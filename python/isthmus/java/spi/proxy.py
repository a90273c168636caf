"""How a Python class becomes an SPI implementation: :func:`implements` declares the Java
interface (and records it for the completeness test) and wraps each public method with :func:`spi`,
so a Python exception reaches Java as the matching ``io.isthmus.*Exception`` with the Python type,
message and traceback (a bare Python exception would reach Java without its message). Java
exceptions pass through unchanged. Python-side helpers of such a class are underscored.

:func:`spi` is also the gate that :func:`close` shuts when the JVM shuts down (see
:mod:`isthmus.java.jvm`): every call from Java into Python passes it."""
from __future__ import annotations

import functools
import inspect
import operator
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

import jpype

from isthmus.errors import IsthmusError

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
    """The Java exception for a Python one, with the Python type, message and traceback, and the
    Python exception itself as its cause (``io.isthmus.PythonException``: the Python frames as
    its stack trace)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    pytype = f"{type(exc).__module__}.{type(exc).__qualname__}"
    name = next((_JAVA_ERRORS[c.__name__] for c in type(exc).__mro__ if c.__name__ in _JAVA_ERRORS),
                "io.isthmus.IsthmusException")
    message = str(exc) or type(exc).__name__
    cls = jpype.JClass(name)
    if name == "io.isthmus.CompileException":
        error = cls(message, pytype, text, getattr(exc, "log", "") or "", getattr(exc, "kernel_name", None) or None)
    else:
        error = cls(message, pytype, text)
    error.initCause(_python_exception(exc))
    return error


def _python_exception(exc: BaseException, depth: int = 0):
    """``exc`` as a Java Throwable: itself when it is a Java exception, else a PythonException
    with its frames, chained to its own cause (a few levels)."""
    if isinstance(exc, jpype.JException):
        return exc
    element = jpype.JClass("java.lang.StackTraceElement")
    frames = [element(Path(f.filename).stem, f.name, Path(f.filename).name, f.lineno or -1)
              for f in traceback.extract_tb(exc.__traceback__)]
    cause = exc.__cause__ if exc.__cause__ is not None else (None if exc.__suppress_context__ else exc.__context__)
    return jpype.JClass("io.isthmus.PythonException")(
        f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}",
        jpype.JArray(element)(frames), None if cause is None or depth >= 8 else _python_exception(cause, depth + 1))


def mirror_java_errors() -> None:
    """Make each ``io.isthmus.*Exception`` that reaches Python (thrown by Java code, also from a
    callback) an instance of the matching ``isthmus.errors`` class too, so ``except
    isthmus.IsthmusError`` (or ``InvalidArgumentError``...) catches it; it stays a
    ``jpype.JException``. The Python class is appended to the Java class's bases (after JPype's
    own, which keep constructing it); subclasses follow."""
    from isthmus import errors

    pairs = [(java, getattr(errors, py)) for py, java in _JAVA_ERRORS.items() if hasattr(errors, py)
             and issubclass(getattr(errors, py), errors.IsthmusError)]
    for java, py in sorted(pairs, key=lambda pair: len(pair[1].__mro__)):  # bases before subclasses
        cls = jpype.JClass(java)
        if py not in cls.__mro__:
            cls.__bases__ = (*cls.__bases__, py)


# Set once the JVM shuts down: every thread but the one shutting down stops at its next call
# from Java (see close()).
_closed_by: int | None = None
_parked: set[int] = set()
_may_park = True  # False when the application's hooks may still run (see close())


def spi(fn):
    """Map every Python exception leaving an SPI method to its Java exception."""
    @functools.wraps(fn)
    def call(*args):
        try:
            if _closed_by is not None:
                _park()  # its refusal, too, reaches Java typed (io.isthmus.IsthmusException)
            return fn(*args)
        except jpype.JException:
            raise
        except Exception as exc:  # noqa: BLE001 - every error must reach Java with its message
            raise java_error(exc) from None
    call.__isthmus_spi__ = True
    return jpype.JOverride(call)


_CALL_CODE = spi(lambda: None).__code__  # the frame of every call from Java through the gate


def _park() -> None:
    """A call from Java after :func:`close`: the thread stops here for good, as a Java thread
    stands still while the JVM ends the process (its halt comes next). Raising instead would
    put an exception into the application's thread during its shutdown, and converting it
    would touch the bridge as it closes."""
    me = threading.get_ident()
    if me == _closed_by:
        return  # the shutdown's own thread (Python exit handlers may call Java, which calls back)
    if not _may_park:  # maybe a shutdown hook, which the JVM waits for: parking it would hang the exit
        raise IsthmusError("the isthmus runtime has been detached: the JVM is shutting down")
    _parked.add(me)
    threading.Event().wait()


def _in_call(frame) -> bool:
    while frame is not None:
        if frame.f_code is _CALL_CODE:
            return True
        frame = frame.f_back
    return False


def close(timeout: float, park: bool = True) -> bool:
    """Stop calls from Java into Python: from now on a call parks its thread (:func:`_park`);
    wait until no other thread is inside one (up to ``timeout`` seconds). Returns whether none
    is; the bridge may then close under the parked threads, which never touch it again.
    ``park=False`` (the application's shutdown hooks may still be running: the JVM did not let
    the runtime run after them) refuses the calls with an IsthmusError instead."""
    global _closed_by, _may_park
    _may_park = park
    me = threading.get_ident()
    _closed_by = me
    deadline = time.monotonic() + timeout
    while True:
        busy = [t for t, f in sys._current_frames().items()  # noqa: SLF001 - the interpreter's own view
                if t != me and t not in _parked and _in_call(f)]
        if not busy:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


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
