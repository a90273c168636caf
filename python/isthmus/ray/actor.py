"""The device actor: a Ray actor that owns one isthmus device and runs shards on it.

It lives as long as its pool: programs, tuned configs, the JVM, Java task instances and the
pipeline's device buffers stay warm across shards. The class is plain Python; the pool wraps it
with ``ray.remote`` (a threaded actor: Ray's threads take calls, a thread per pipeline slot runs
shards, see pipeline.py).
"""
from __future__ import annotations

import faulthandler
import json
import os
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import isthmus
from isthmus.dtypes import lookup
from isthmus.tune import db as dbmod
from isthmus.tune.exchange import export, import_document
from isthmus.tune.space import kernel_family

from .claim import choose
from .pipeline import Pipeline
from .shards import shard_arrays
from .tasks import JavaTask, java_call


@dataclass(frozen=True)
class ActorSpec:
    """How one device actor starts (sent to it; a restarted actor gets the same)."""

    backend: str = "auto"
    device: str | None = None
    kind: str | None = None
    classpath: tuple[str, ...] = ()
    java: bool = False
    depth: int = 3


class DeviceActor:
    """One isthmus device on a Ray node (created by :class:`isthmus.ray.DevicePool`)."""

    def __init__(self, spec: ActorSpec, tuning=None):
        import ray

        self.device, self._claim = choose(spec.backend, spec.device, spec.kind, list(ray.get_gpu_ids()))
        self._java = bool(spec.classpath) or spec.java
        if self._java:
            _start_jvm(spec.classpath)
        if tuning is not None:
            self.import_tuning(tuning)
        self._pipeline = Pipeline(self.device, spec.depth)
        # one thread per pipeline slot: the shards of every call in flight share them
        self._workers = ThreadPoolExecutor(spec.depth, thread_name_prefix="isthmus-shard")
        self._calls: dict = {}
        self._calls_lock = threading.Lock()

    def info(self) -> dict:
        import ray

        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(), "device": self.device.info(),
                "identity": self.device.identity(), "java": self._java}

    def run(self, task, indices: list, *shards) -> list:
        """Shards ``indices`` through ``task``, all in the pipeline at once (up to its depth). Per
        shard ``(True, results)`` (NumPy arrays: one, or a tuple) or ``(False, error, traceback
        text)``: one shard's failure is its own, not its batch's."""
        futures = [self._workers.submit(self._one, task, i, s) for i, s in zip(indices, shards)]
        return [_outcome(f) for f in futures]

    def _one(self, task, index: int, shard):
        arrays = shard_arrays(shard, index)
        return self._pipeline.run(self._call_for(task), arrays, index)

    def _call_for(self, task):
        if not isinstance(task, JavaTask):
            return task
        with self._calls_lock:  # one instance per class and actor, even when two shards ask at once
            call = self._calls.get(task)
            if call is None:
                call = self._calls[task] = java_call(task, self.device, self._java)
            return call

    # ---- tuning ------------------------------------------------------------------------------
    def tune(self, kernel: str, problem: dict, options: dict) -> dict:
        """Tune ``kernel`` here into a private database and return it exported (the pool installs it
        into every actor's database, this one included)."""
        db = dbmod.Database.memory()
        try:
            isthmus.tune(kernel, device=self.device, problem=problem, database=db, **options)
            return export(db)
        finally:
            db.close()

    def import_tuning(self, source) -> int:
        """Merge tuned configs (an exported document, or the path of one) into this node's user database."""
        doc, name = source, "tuning document"
        if isinstance(source, (str, Path)):
            name = str(source)
            doc = json.loads(Path(source).read_text())
        count = import_document(dbmod.user(), doc, source=name)
        dbmod.forget()  # launches from now on look the new entries up
        return count

    def explain(self, kernel: str, problem: dict, dtype: str = "float32"):
        """(where, params) of the config a launch of ``kernel`` at ``problem`` would use here, or None."""
        return dbmod.explain(kernel_family(kernel), self.device, lookup(dtype), problem)

    def close(self) -> None:
        self._workers.shutdown()
        self._pipeline.close()


def _outcome(future) -> tuple:
    try:
        return (True, future.result())
    except Exception as exc:  # noqa: BLE001 - every shard's error goes back to the driver, which decides
        return (False, exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def _start_jvm(classpath: tuple[str, ...]) -> None:
    # Ray turns faulthandler on in every worker; its SIGSEGV handler breaks HotSpot, which uses that
    # signal on purpose (DESIGN.md, "Java through JPype"): off before the JVM installs its own.
    import isthmus.java

    faulthandler.disable()
    isthmus.java.start(list(classpath))
