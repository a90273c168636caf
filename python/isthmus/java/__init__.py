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

from . import jvm
from .jvm import classpath, from_java, shutdown, started, to_java


def start(classpath=None, jvm_args=()) -> None:
    """Start the JVM once (idempotent) with the isthmus jar, ``ISTHMUS_CLASSPATH`` and
    ``classpath`` (a list or an ``os.pathsep`` string), and attach the runtime, so Java code
    reaches it through ``io.isthmus.Isthmus.get()``. ``jvm_args`` are JVM options (``-Xmx2g``)."""
    jvm.start(classpath, tuple(jvm_args))


__all__ = ["classpath", "from_java", "shutdown", "start", "started", "to_java"]
