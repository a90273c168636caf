"""map over two device actors: Python and Java tasks, results equal to the single-process run."""
from __future__ import annotations

import numpy as np
import pytest

import isthmus
import isthmus.ray
from isthmus.ray import JavaTask, ShardError


def softmax_task(dev, bufs):
    # write into a poisoned buffer: a kernel that skipped an element would leave a NaN
    out = dev.asarray(np.full(bufs[0].shape, np.nan, np.float32))
    return isthmus.ops.softmax(bufs[0], out=out)


def two_out_task(dev, bufs):
    return isthmus.ops.transpose(bufs[0]), isthmus.ops.sum(bufs[1])


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _shards(rng, count):
    # odd sizes: rows and columns that are primes or 1, not multiples of any work-group size
    rows = [1, 7, 97, 131, 13, 61, 3, 211, 29][:count]
    return [rng.standard_normal((r, 67)).astype(np.float32) for r in rows]


@pytest.mark.parametrize("batch", [1, 4])
def test_python_task_equals_single_process_and_numpy(pool, rng, batch):
    shards = _shards(rng, 9)
    out = pool.map(softmax_task, shards, batch=batch)
    assert len(out) == len(shards) and pool.last_report.calls >= -(-len(shards) // batch)
    for got, want, x in zip(out, isthmus.ray.run_local(softmax_task, shards), shards):
        assert np.array_equal(got, want)
        np.testing.assert_allclose(got, np_softmax(x), rtol=1e-5, atol=1e-7)
    assert sum(pool.last_report.per_actor.values()) == len(shards) and len(pool.last_report.per_actor) == 2


def test_several_inputs_and_outputs(pool, rng):
    shards = [(rng.standard_normal((r, 5)).astype(np.float32), rng.standard_normal(r * 3 + 1).astype(np.float32))
              for r in (1, 17, 4, 33)]
    out = pool.map(two_out_task, shards)
    for (t, s), (a, b) in zip(out, shards):
        assert np.array_equal(t, a.T)
        np.testing.assert_allclose(s[0], b.sum(dtype=np.float64), rtol=1e-4, atol=1e-5)


def test_java_task_equals_python_single_process(pool, rng):
    shards = [(rng.standard_normal((r, 41)).astype(np.float32), rng.standard_normal(r * 7).astype(np.float32))
              for r in (5, 1, 83, 19, 2, 47)]
    got = pool.map(JavaTask("raytest.SoftmaxAndSum"), shards)

    def same_in_python(dev, bufs):
        return isthmus.ops.softmax(bufs[0]), isthmus.ops.sum(bufs[1])

    want = isthmus.ray.run_local(same_in_python, shards)
    for (gp, gs), (wp, ws) in zip(got, want):
        assert np.array_equal(gp, wp) and np.array_equal(gs, ws)


def test_shards_already_in_the_object_store(pool, rng):
    import ray

    shards = _shards(rng, 4)
    out = pool.map(softmax_task, [ray.put(s) for s in shards])
    for got, want in zip(out, isthmus.ray.run_local(softmax_task, shards)):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("batch", [1, 3])
def test_failed_tasks_are_retried_once_each(pool, rng, tmp_path, batch):
    shards = _shards(rng, 6)
    marks = tmp_path

    def flaky(dev, bufs):
        # the first attempt at every shard of more than 50 rows fails; the file says it was made
        mark = marks / f"{bufs[0].shape[0]}"
        if bufs[0].shape[0] > 50 and not mark.exists():
            mark.touch()
            raise RuntimeError("transient failure")
        return softmax_task(dev, bufs)

    out = pool.map(flaky, shards, batch=batch)  # in a batch, only the failed shards are retried
    assert pool.last_report.retried == sum(1 for s in shards if s.shape[0] > 50) == 3
    for got, want in zip(out, isthmus.ray.run_local(softmax_task, shards)):
        assert np.array_equal(got, want)


def test_a_task_that_always_fails_raises_shard_error(pool, rng):
    def broken(dev, bufs):
        raise RuntimeError("always broken")

    with pytest.raises(ShardError, match="always broken") as info:
        pool.map(broken, _shards(rng, 2))
    assert info.value.attempts == pool.retries + 1 and info.value.index in (0, 1)


def test_java_exception_reaches_the_caller_with_its_message(pool, rng):
    with pytest.raises(ShardError, match="shard refused by raytest.Throws") as info:
        pool.map(JavaTask("raytest.Throws"), _shards(rng, 1))
    assert "IllegalStateException" in str(info.value)


@pytest.mark.parametrize("name, message", [("raytest.NotATask", "does not implement io.isthmus.ShardTask"),
                                           ("raytest.Missing", "not found on the actor's classpath"),
                                           ("raytest.ReturnsNull", "returned null")])
def test_bad_java_tasks_are_typed_errors_not_retried(pool, rng, name, message):
    with pytest.raises(isthmus.InvalidArgumentError, match=message):
        pool.map(JavaTask(name), _shards(rng, 1))
    assert pool.last_report.retried == 0


def test_bad_input_is_refused_before_anything_runs(pool, rng):
    good = rng.standard_normal((3, 4)).astype(np.float32)
    with pytest.raises(isthmus.InvalidArgumentError, match="shard 1 is a str"):
        pool.map(softmax_task, [good, "text"])
    with pytest.raises(isthmus.InvalidArgumentError, match="shard 1, array 0 has dtype object"):
        pool.map(softmax_task, [good, np.array([object()])])
    with pytest.raises(isthmus.InvalidArgumentError, match="shard 0 holds no arrays"):
        pool.map(softmax_task, [()])
    with pytest.raises(isthmus.InvalidArgumentError, match="a task must be a callable"):
        pool.map(42, [good])
    with pytest.raises(isthmus.InvalidArgumentError, match="Java class name"):
        JavaTask("not a class name")
    with pytest.raises(isthmus.UnsupportedDtypeError, match="complex64"):
        pool.map(softmax_task, [good.astype(np.complex64)])
    with pytest.raises(isthmus.InvalidArgumentError, match="returned a str"):
        pool.map(lambda dev, bufs: "not an array", [good])
    with pytest.raises(isthmus.InvalidArgumentError, match="batch must be an integer >= 1"):
        pool.map(softmax_task, [good], batch=0)
    assert pool.map(softmax_task, []) == []


def test_pool_options_are_checked(ray_cluster):
    with pytest.raises(isthmus.InvalidArgumentError, match="actors must be an integer >= 1"):
        isthmus.ray.DevicePool(0)
    with pytest.raises(isthmus.InvalidArgumentError, match="backend must be one of"):
        isthmus.ray.DevicePool(1, backend="vulkan")
    with pytest.raises(isthmus.InvalidArgumentError, match="kind must be one of"):
        isthmus.ray.DevicePool(1, kind="fpga")
    with pytest.raises(isthmus.InvalidArgumentError, match="tuning must be"):
        isthmus.ray.DevicePool(1, tuning=3)


def test_without_ray_the_pool_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` finds where Ray is not installed
    with pytest.raises(isthmus.BackendUnavailableError, match=r"pip install 'isthmus\[ray\]'"):
        isthmus.ray.DevicePool(1)


def test_a_closed_pool_refuses_work(ray_cluster):
    closed = isthmus.ray.DevicePool(1, devices=["opencl:1"], actor_options={"num_cpus": 0})
    closed.close()
    closed.close()  # idempotent
    with pytest.raises(isthmus.ray.DeviceActorError, match="closed"):
        closed.map(softmax_task, [np.ones((2, 2), np.float32)])
