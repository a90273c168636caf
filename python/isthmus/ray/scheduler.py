"""``map``: shards spread over a pool's device actors, in order, each result exactly once.

Shards go to actors in calls of ``batch`` shards (one Ray call costs milliseconds of host time:
a batch pays it once for several shards); the driver keeps ``depth + batch`` shards in flight per
actor, so Ray fetches the next call's shards while the actor's pipeline works on the current
ones. Shard ``i``'s result lands in slot ``i`` of the output and nowhere else; a slot is filled
once. When something fails:

- the actor died (``RayActorError``: killed, crashed, its node lost): the pool replaces it (the same
  spec, so it claims a device again and installs the pool's tuning) and every shard it held goes
  back to the queue; this is not held against those shards.
- a shard's task raised: that shard (not its batch) goes back to the queue, at most ``retries``
  times, then :class:`ShardError`. A bad-input error (``isthmus.InvalidArgumentError``) is not
  retried: it would fail the same way again; it is raised as it is.
- anything else Ray reports for a call (a result lost with its node): a failure of each of its shards.

Requeued shards run before new ones (lowest index first), so the output completes in order.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from isthmus.errors import InvalidArgumentError, IsthmusError

from .claim import DeviceActorError
from .shards import shard_arrays
from .tasks import check_task


class ShardError(IsthmusError):
    """A shard's task failed on every attempt. ``index``: the shard; ``attempts``: how many ran;
    the last error is the ``__cause__``."""

    def __init__(self, message: str, *, index: int, attempts: int):
        super().__init__(message)
        self.index = index
        self.attempts = attempts


@dataclass
class MapReport:
    """What one ``map`` did: shards per actor slot, failed attempts retried, actors replaced."""

    shards: int = 0
    calls: int = 0
    per_actor: dict = field(default_factory=dict)
    retried: int = 0
    replaced: int = 0
    rerun_after_death: int = 0


_MISSING = object()


class _Run:
    """The state of one map: what is queued, in flight, done."""

    def __init__(self, pool, task, shards: list, batch: int, on_result):
        import ray

        self.pool, self.shards, self.batch, self.on_result = pool, shards, batch, on_result
        self.report = pool.last_report = MapReport(shards=len(shards))
        self.results = [_MISSING] * len(shards)
        self.failures = [0] * len(shards)
        self.stored: dict[int, object] = {}  # shard index -> its ObjectRef, kept until its result is in
        self.pending = list(range(len(shards)))  # a heap: lowest index first
        self.inflight: dict = {}  # call ref -> (shard indices, member, incarnation)
        self.task_ref = ray.put(task)
        self.done = 0

    def loop(self) -> list:
        import ray

        while self.done < len(self.shards):
            self.fill()
            ready, _ = ray.wait(list(self.inflight), num_returns=1)
            for ref in ready:
                self.collect(ref)
        return self.results

    # ---- submitting --------------------------------------------------------------------------
    def fill(self) -> None:
        """Submit queued shards to actors with room, least loaded first, a batch per call."""
        load: dict = {}
        for indices, member, incarnation in self.inflight.values():
            if member.incarnation == incarnation:
                load[member.slot] = load.get(member.slot, 0) + len(indices)
        limit = self.pool.depth + self.batch
        while self.pending:
            room = [m for m in self.pool._members if load.get(m.slot, 0) < limit]
            if not room:
                return
            member = min(room, key=lambda m: load.get(m.slot, 0))
            take = min(self.batch, limit - load.get(member.slot, 0), len(self.pending))
            indices = [heapq.heappop(self.pending) for _ in range(take)]
            refs = [self.ref_of(i) for i in indices]
            self.inflight[member.handle.run.remote(self.task_ref, indices, *refs)] = (indices, member,
                                                                                     member.incarnation)
            self.report.calls += 1
            load[member.slot] = load.get(member.slot, 0) + take

    def ref_of(self, index: int):
        import ray

        ref = self.stored.get(index)
        if ref is None:
            shard = self.shards[index]
            ref = self.stored[index] = shard if isinstance(shard, ray.ObjectRef) else ray.put(shard)
        return ref

    # ---- collecting --------------------------------------------------------------------------
    def collect(self, ref) -> None:
        import ray

        indices, member, incarnation = self.inflight.pop(ref)
        try:
            outcomes = ray.get(ref)
        except ray.exceptions.RayActorError:
            if member.incarnation == incarnation:
                self.pool._replace(member)
                self.report.replaced += 1
            self.report.rerun_after_death += len(indices)
            for index in indices:
                heapq.heappush(self.pending, index)
            return
        except Exception as exc:  # noqa: BLE001 - Ray lost the call's result: each shard failed once
            outcomes = [(False, exc, "")] * len(indices)
        for index, outcome in zip(indices, outcomes):
            if outcome[0]:
                self.finish(index, member, outcome[1])
            else:
                self.failed(index, outcome[1], outcome[2])

    def finish(self, index: int, member, value) -> None:
        if self.results[index] is not _MISSING:  # cannot happen: a shard is in flight once at a time
            raise AssertionError(f"shard {index} produced two results")
        self.results[index] = value
        self.stored.pop(index, None)
        self.report.per_actor[member.slot] = self.report.per_actor.get(member.slot, 0) + 1
        self.done += 1
        if self.on_result is not None:
            self.on_result(index)

    def failed(self, index: int, exc: BaseException, where: str) -> None:
        if isinstance(exc, InvalidArgumentError):
            raise exc
        self.failures[index] += 1
        if self.failures[index] > self.pool.retries:
            raise ShardError(f"shard {index} failed {self.failures[index]} times (retries={self.pool.retries}); "
                             f"last error: {type(exc).__name__}: {exc}\n{where}", index=index,
                             attempts=self.failures[index]) from exc
        self.report.retried += 1
        heapq.heappush(self.pending, index)


def run_map(pool, task, shards, batch: int = 1, on_result=None) -> list:
    import ray

    check_task(task)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidArgumentError(f"batch must be an integer >= 1 (shards per Ray call), got {batch!r}")
    if any(m.handle is None for m in pool._members):
        raise DeviceActorError("this DevicePool is closed; create a new one")
    shards = list(shards)
    for i, s in enumerate(shards):
        if not isinstance(s, ray.ObjectRef):
            shard_arrays(s, i)  # bad input is refused here, before anything runs
    return _Run(pool, task, shards, batch, on_result).loop()
