"""isthmus from Java: the JVM hosted in this process, sharing devices and buffers with Python.

>>> import isthmus, isthmus.java
>>> isthmus.java.start()                      # once; starts the JVM with the io.isthmus jar
>>> x = isthmus.device().zeros(4, "float32")
>>> jx = isthmus.java.to_java(x)              # io.isthmus.DeviceBuffer, same allocation
>>> isthmus.java.from_java(jx) is x
True

Java applications run with ``isthmus java [-cp CP] MAIN [ARGS]`` (see :mod:`.launcher`).
Nothing here touches the JVM at import.
"""
from __future__ import annotations

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError

from . import jvm
from .jvm import classpath, shutdown, started


def start(classpath=None, jvm_args=()) -> None:
    """Start the JVM once (idempotent) with the isthmus jar, ``ISTHMUS_CLASSPATH`` and
    ``classpath`` (a list or an ``os.pathsep`` string), and attach the runtime, so Java code
    reaches it through ``io.isthmus.Isthmus.get()``. ``jvm_args`` are JVM options (``-Xmx2g``)."""
    jvm.start(classpath, tuple(jvm_args))


def to_java(buffer: Buffer):
    """The ``io.isthmus.DeviceBuffer`` for a Python Buffer: a new Java handle on the same
    allocation (same pointer, no copy). Closing it in Java leaves the Python Buffer open."""
    import jpype

    from .spi.buffers import BufferHandle

    jvm.runtime()
    if not isinstance(buffer, Buffer):
        raise InvalidArgumentError(f"to_java needs an isthmus.Buffer, got {type(buffer).__name__}")
    buffer._check()
    return jpype.JClass("io.isthmus.Interop").wrap(BufferHandle(buffer, owned=False))


def from_java(device_buffer) -> Buffer:
    """The Python Buffer behind an ``io.isthmus.DeviceBuffer`` (the same object, no copy).
    Python now holds it too: closing the Java handle no longer frees it."""
    import jpype

    from .spi.buffers import BufferHandle

    jvm.runtime()
    if not isinstance(device_buffer, jpype.JClass("io.isthmus.DeviceBuffer")):
        raise InvalidArgumentError(f"from_java needs an io.isthmus.DeviceBuffer, got {type(device_buffer).__name__}")
    handle = jpype.JClass("io.isthmus.Interop").handle(device_buffer)
    if not isinstance(handle, BufferHandle):
        raise InvalidArgumentError("this DeviceBuffer is not backed by the isthmus Python runtime")
    handle.owned = False
    return handle._live()


__all__ = ["classpath", "from_java", "shutdown", "start", "started", "to_java"]
