"""``map``: shards spread over a pool's device actors, in order, each result exactly once.

The driver keeps ``depth + 1`` shards in flight per actor (one more than the actor runs at once, so
Ray fetches the next shard's arrays while the others compute). Shard ``i``'s result lands in slot
``i`` of the output and nowhere else; a slot is filled once. When a call fails:

- the actor died (``RayActorError``: killed, crashed, its node lost): the pool replaces it (the same
  spec, so it claims a device again and installs the pool's tuning) and every shard it held goes
  back to the queue; this is not held against those shards.
- the task raised: the shard goes back to the queue, at most ``retries`` times, then
  :class:`ShardError`. A bad-input error (``isthmus.InvalidArgumentError``) is not retried: it would
  fail the same way again; it is raised as it is.
- anything else Ray reports (a result lost with its node): as a task failure.

Requeued shards run before new ones (lowest index first), so the output completes in order.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from isthmus.errors import InvalidArgumentError, IsthmusError

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
    per_actor: dict = field(default_factory=dict)
    retried: int = 0
    replaced: int = 0
    rerun_after_death: int = 0


_MISSING = object()


def run_map(pool, task, shards, on_result=None) -> list:
    import ray

    check_task(task)
    if any(m.handle is None for m in pool._members):
        from .claim import DeviceActorError

        raise DeviceActorError("this DevicePool is closed; create a new one")
    shards = list(shards)
    for i, s in enumerate(shards):
        if not isinstance(s, ray.ObjectRef):
            shard_arrays(s, i)  # bad input is refused here, before anything runs
    report = pool.last_report = MapReport(shards=len(shards))
    results = [_MISSING] * len(shards)
    failures = [0] * len(shards)
    stored: dict[int, object] = {}  # shard index -> its ObjectRef, kept until its result is in
    pending = list(range(len(shards)))  # a heap: lowest index first
    inflight: dict = {}  # result ref -> (shard index, member, incarnation)
    task_ref = ray.put(task)
    done = 0
    while done < len(shards):
        _fill(pool, pending, inflight, shards, stored, task_ref)
        ready, _ = ray.wait(list(inflight), num_returns=1)
        for ref in ready:
            index, member, incarnation = inflight.pop(ref)
            try:
                value = ray.get(ref)
            except ray.exceptions.RayActorError:
                if member.incarnation == incarnation:
                    pool._replace(member)
                    report.replaced += 1
                report.rerun_after_death += 1
                heapq.heappush(pending, index)
                continue
            except InvalidArgumentError:
                raise
            except Exception as exc:  # noqa: BLE001 - the task's own error, whatever it is, is retried
                failures[index] += 1
                if failures[index] > pool.retries:
                    raise ShardError(f"shard {index} failed {failures[index]} times (retries={pool.retries}); "
                                     f"last error: {exc}", index=index, attempts=failures[index]) from exc
                report.retried += 1
                heapq.heappush(pending, index)
                continue
            if results[index] is not _MISSING:  # cannot happen: a shard is in flight once at a time
                raise AssertionError(f"shard {index} produced two results")
            results[index] = value
            stored.pop(index, None)
            report.per_actor[member.slot] = report.per_actor.get(member.slot, 0) + 1
            done += 1
            if on_result is not None:
                on_result(index)
    return results


def _fill(pool, pending: list, inflight: dict, shards: list, stored: dict, task_ref) -> None:
    """Submit queued shards to actors with room, round robin, up to ``depth + 1`` each."""
    load: dict = {}
    for index, member, incarnation in inflight.values():
        if member.incarnation == incarnation:
            load[member.slot] = load.get(member.slot, 0) + 1
    limit = pool.depth + 1
    while pending:
        room = [m for m in pool._members if load.get(m.slot, 0) < limit]
        if not room:
            return
        for member in sorted(room, key=lambda m: load.get(m.slot, 0)):
            if not pending:
                return
            index = heapq.heappop(pending)
            ref = stored.get(index)
            if ref is None:
                import ray

                shard = shards[index]
                ref = stored[index] = shard if isinstance(shard, ray.ObjectRef) else ray.put(shard)
            inflight[member.handle.run.remote(task_ref, index, ref)] = (index, member, member.incarnation)
            load[member.slot] = load.get(member.slot, 0) + 1
