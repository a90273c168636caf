"""Tasks: what a device actor runs on each shard.

A Python task is any callable ``task(device, buffers)``: the actor's :class:`isthmus.Device` and
the shard's arrays as isthmus Buffers on it; it returns Buffers or NumPy arrays. A Java task is a
class implementing ``io.isthmus.ShardTask``, named by :class:`JavaTask` and loaded from the actor's
classpath; one instance per actor, kept across shards.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from isthmus.device import Device
from isthmus.errors import InvalidArgumentError, IsthmusError

_JAVA_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


class JavaTaskError(IsthmusError):
    """A Java ``ShardTask`` threw: the message holds the Java exception's class, message and stack trace."""


@dataclass(frozen=True)
class JavaTask:
    """A Java class implementing ``io.isthmus.ShardTask``, by its binary name.

    >>> pool = isthmus.ray.DevicePool(2, classpath=["scoring.jar"])
    >>> pool.map(isthmus.ray.JavaTask("example.ScoringShard"), shards)
    """

    class_name: str

    def __post_init__(self):
        if not isinstance(self.class_name, str) or not _JAVA_NAME.match(self.class_name):
            raise InvalidArgumentError(f"JavaTask needs a Java class name such as 'com.example.MyTask', "
                                       f"got {self.class_name!r}")


def check_task(task) -> None:
    """Refuse, before anything is sent to the cluster, what can never be a task."""
    if not isinstance(task, JavaTask) and not callable(task):
        raise InvalidArgumentError(f"a task must be a callable task(device, buffers) or an isthmus.ray.JavaTask, "
                                   f"got {type(task).__name__}")


def java_call(task: JavaTask, device: Device, jvm_started: bool):
    """``call(device, buffers)`` running one new instance of ``task``'s class (load errors raised here)."""
    if not jvm_started:
        raise InvalidArgumentError(f"JavaTask({task.class_name!r}) needs the actor's JVM: create the pool with "
                                   "classpath=[...] (the jars or folders holding the class) or java=True")
    import jpype

    try:
        cls = jpype.JClass(task.class_name)
    except (TypeError, jpype.JException) as exc:
        raise InvalidArgumentError(f"Java class {task.class_name!r} was not found on the actor's classpath "
                                   f"({exc}); pass its jar or folder in DevicePool(classpath=[...])") from None
    shard_task = jpype.JClass("io.isthmus.ShardTask")
    if not issubclass(cls, shard_task):
        raise InvalidArgumentError(f"Java class {task.class_name} does not implement io.isthmus.ShardTask")
    try:
        instance = cls()
    except jpype.JException as exc:
        raise JavaTaskError(f"new {task.class_name}() failed: {_java_text(exc)}") from None
    jdevice = jpype.JClass("io.isthmus.Isthmus").get().device(device.id)
    array_type = jpype.JArray(jpype.JClass("io.isthmus.DeviceBuffer"))

    def call(_device: Device, buffers: list):
        return _run_java(instance, task.class_name, jdevice, array_type, buffers)

    return call


def _run_java(instance, name: str, jdevice, array_type, buffers: list) -> tuple:
    import jpype

    from isthmus.java import from_java, to_java

    handles = [to_java(b) for b in buffers]
    try:
        try:
            produced = instance.run(jdevice, array_type(handles))
        except jpype.JException as exc:
            raise JavaTaskError(f"{name}.run failed: {_java_text(exc)}") from None
        if produced is None or len(produced) == 0:
            raise InvalidArgumentError(f"{name}.run returned {'null' if produced is None else 'no buffers'}; "
                                       "return at least one DeviceBuffer")
        results = []
        for k, jbuf in enumerate(produced):
            if jbuf is None:
                raise InvalidArgumentError(f"{name}.run returned null as result {k}")
            results.append(from_java(jbuf))
            jbuf.close()  # Python holds the buffer now (from_java): the Java handle only lets go
        return tuple(results)
    finally:
        for h in handles:
            h.close()  # a handle from to_java: closing it leaves the slot's buffer open


def _java_text(exc) -> str:
    try:
        return f"{exc.getClass().getName()}: {exc.getMessage()}\n{exc.stacktrace()}"
    except Exception:  # noqa: BLE001 - the description of an error must not raise one
        return repr(exc)
