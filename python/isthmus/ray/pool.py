"""DevicePool: the device actors of a job, kept alive across maps, replaced when they die."""
from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass

from isthmus.errors import BackendUnavailableError, InvalidArgumentError
from isthmus.tune.exchange import validate

from .actor import ActorSpec, DeviceActor
from .claim import DeviceActorError, check_choice
from .scheduler import run_map
from .tuning import tune_pool


@dataclass
class _Member:
    """One actor slot of the pool: its current actor and how many times it was replaced."""

    slot: int
    spec: ActorSpec
    handle: object = None
    incarnation: int = 0
    restarts: int = 0


class DevicePool:
    """``actors`` device actors, each owning one device on its node.

    >>> import ray, isthmus.ray
    >>> ray.init()
    >>> with isthmus.ray.DevicePool(2) as pool:          # GPUs Ray assigns, else free OpenCL devices
    ...     sums = pool.map(lambda dev, bufs: isthmus.ops.sum(bufs[0]), shards)

    ``backend``: ``"auto"`` (a GPU Ray assigned, else a free OpenCL device of the node), ``"cuda"``
    or ``"opencl"``; ``devices``: device ids, one per actor in turn, instead of choosing; ``kind``:
    the OpenCL device kind to claim (``"gpu"``, ``"cpu"``); ``classpath``/``java``: start the actor's
    JVM (jars and folders present on every node) for :class:`JavaTask`; ``depth``: shards each actor
    works on at once (the pipeline's slots); ``retries``: attempts after a task's failure;
    ``max_restarts``: replacements per actor slot; ``actor_options``: Ray actor options
    (``num_gpus``, ``num_cpus``, ``resources``, ``scheduling_strategy``...), by default one GPU per
    actor for ``backend="cuda"``, else one CPU; ``tuning``: tuned configs installed in every actor
    (an exported document or the path of one, see :meth:`tune`).
    """

    def __init__(self, actors: int = 1, *, backend: str = "auto", devices=None, kind: str | None = None,
                 classpath=(), java: bool = False, depth: int = 3, retries: int = 2, max_restarts: int = 3,
                 actor_options: dict | None = None, tuning=None):
        ray = _require_ray()
        _check_counts(actors=actors, depth=depth, retries=retries, max_restarts=max_restarts)
        check_choice(backend, kind)
        if isinstance(classpath, str):
            classpath = classpath.split(":")
        devices = list(devices or ())
        self.depth, self.retries, self.max_restarts = depth, retries, max_restarts
        self.last_report = None
        self._tuning = None
        options = {"num_gpus": 1} if backend == "cuda" else {"num_cpus": 1}
        options.update(actor_options or {})
        # Ray's own restarts stay off: the pool replaces a dead actor itself, so that it knows which
        # shards to rerun and can hand the replacement the pool's current tuning.
        # Calls wait on the actor's shard threads (one per pipeline slot); two more let info/tune/explain
        # calls through while maps run.
        options.update(max_concurrency=depth + 2, max_restarts=0, max_task_retries=0)
        self._actor_class = ray.remote(DeviceActor).options(**options)
        self._members = [_Member(i, ActorSpec(backend, devices[i % len(devices)] if devices else None, kind,
                                              tuple(str(c) for c in classpath), java, depth))
                         for i in range(actors)]
        try:
            if tuning is not None:
                self._tuning = _tuning_source(tuning)
            for m in self._members:
                self._start(m)
            self.actors()  # (waits until every actor has started)
        except BaseException:
            self.close()
            raise

    # ---- actors ------------------------------------------------------------------------------
    def _start(self, member: _Member) -> None:
        member.handle = self._actor_class.remote(member.spec, self._tuning)
        member.incarnation += 1

    def _replace(self, member: _Member) -> None:
        """Start a new actor in ``member``'s slot (the old one is dead or unreachable)."""
        import ray

        member.restarts += 1
        if member.restarts > self.max_restarts:
            raise DeviceActorError(f"device actor {member.slot} died {member.restarts} times "
                                   f"(max_restarts={self.max_restarts}); see the Ray worker logs for why")
        with suppress(Exception):  # already gone
            ray.kill(member.handle, no_restart=True)  # unreachable is not dead: make sure
        self._start(member)

    @property
    def handles(self) -> list:
        """The Ray actor handles, one per slot (a replaced actor's slot holds its replacement)."""
        return [m.handle for m in self._members]

    def actors(self) -> list[dict]:
        """Each actor's pid, node, device description and identity (asks the live actors)."""
        import ray

        try:
            return ray.get([m.handle.info.remote() for m in self._members])
        except ray.exceptions.RayActorError as exc:
            raise DeviceActorError(f"a device actor failed to start: {exc}") from exc

    def __len__(self) -> int:
        return len(self._members)

    # ---- work --------------------------------------------------------------------------------
    def map(self, task, shards, *, batch: int = 1, on_result=None) -> list:
        """``task`` on every shard, spread over the actors; the results in shard order (NumPy arrays:
        one per shard, or a tuple where the task returns several). ``task``: a callable
        ``task(device, buffers)`` or a :class:`JavaTask`; ``shards``: NumPy arrays, tuples of arrays,
        Arrow tables or ObjectRefs of those; ``batch``: shards per Ray call (a call costs
        milliseconds of host time; a batch pays it once, and a dead actor's whole batches rerun);
        ``on_result(index)`` is called as each result arrives. ``self.last_report`` says what
        happened (calls, retries, replaced actors)."""
        return run_map(self, task, shards, batch, on_result)

    def tune(self, kernel: str, problem: dict, *, path=None, **options):
        """Tune ``kernel`` once per distinct device model in the pool and install the result in
        every actor (see :func:`isthmus.ray.tuning.tune_pool`)."""
        return tune_pool(self, kernel, problem, path, options)

    def install_tuning(self, tuning) -> list[int]:
        """Merge tuned configs (an exported document, or the path of one that every node can read)
        into every actor's database; actors started later (replacements) get them too. Returns the
        entry count each actor imported."""
        import ray

        self._tuning = _tuning_source(tuning)
        return ray.get([m.handle.import_tuning.remote(self._tuning) for m in self._members])

    def close(self) -> None:
        """Stop the actors (their devices are free for others). Idempotent."""
        import ray

        for m in self._members:
            if m.handle is not None:
                with suppress(Exception):  # already dead
                    ray.kill(m.handle, no_restart=True)
                m.handle = None

    def __enter__(self) -> "DevicePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _require_ray():
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError(f"isthmus.ray needs Ray ({exc}): pip install 'isthmus[ray]' on every "
                                      "node of the cluster") from None
    return ray


def _tuning_source(tuning):
    """What actors import: a path as it is (each reads it), a document through the object store."""
    import ray

    if isinstance(tuning, (str, os.PathLike)):
        return os.fspath(tuning)
    if isinstance(tuning, dict):
        validate(tuning, source="tuning")  # refused here, not once per actor
        return ray.put(tuning)
    raise InvalidArgumentError(f"tuning must be an exported tuning document (dict) or a path, "
                               f"got {type(tuning).__name__}")


def _check_counts(**counts) -> None:
    least = {"actors": 1, "depth": 1, "retries": 0, "max_restarts": 0}
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < least[name]:
            raise InvalidArgumentError(f"{name} must be an integer >= {least[name]}, got {value!r}")
