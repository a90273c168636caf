"""An actor killed mid-job: it is replaced, its shards rerun, nothing lost or duplicated."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import isthmus
import isthmus.ray

SHARDS = 20


def slow_softmax(dev, bufs):
    time.sleep(0.02)  # keep every actor busy long enough for the kill to land mid-job
    return isthmus.ops.softmax(bufs[0])


@pytest.mark.parametrize("how, batch", [("os.kill", 1), ("ray.kill", 3), ("crash in a task", 1)])
def test_killed_actor_is_replaced_and_its_shards_rerun(pool, rng, tmp_path, how, batch):
    import ray

    shards = [rng.standard_normal((int(r), 29)).astype(np.float32) for r in rng.integers(1, 90, SHARDS)]
    victim = pool.actors()[0]["pid"]
    handle = pool.handles[0]
    task = slow_softmax
    seen = []

    def kill_after_four(index):
        seen.append(index)
        if len(seen) == 4:
            if how == "os.kill":
                os.kill(victim, signal.SIGKILL)
            elif how == "ray.kill":
                ray.kill(handle, no_restart=True)

    if how == "crash in a task":
        mark = tmp_path / "crashed"

        def task(dev, bufs):  # noqa: F811 - the shard 7's first attempt takes its actor down
            if bufs[0].shape[0] == shards[7].shape[0] and not mark.exists():
                mark.touch()
                os.kill(os.getpid(), signal.SIGKILL)
            return slow_softmax(dev, bufs)

    out = pool.map(task, shards, batch=batch, on_result=kill_after_four)
    report = pool.last_report
    assert report.replaced == 1 and report.rerun_after_death >= 1, report
    assert sorted(seen) == list(range(SHARDS))  # every shard's result arrived exactly once
    for got, want in zip(out, isthmus.ray.run_local(slow_softmax, shards)):
        assert np.array_equal(got, want)
    assert victim not in [a["pid"] for a in pool.actors()] or how == "crash in a task"
