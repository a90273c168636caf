"""The actor's pipeline, in this process: uploads overlap another shard's compute, slots are reused
safely, results come back whatever the task returns."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import isthmus
from isthmus.ray.pipeline import Pipeline


def _softmax(dev, bufs):
    return isthmus.ops.softmax(bufs[0])


def test_upload_of_next_shard_runs_while_a_shard_computes(dev, rng):
    pipe = Pipeline(dev, depth=2)
    x = [rng.standard_normal((37, 19)).astype(np.float32) for _ in range(4)]
    pipe.run(_softmax, (x[0],), 0)
    pipe.run(_softmax, (x[1],), 1)  # both slots now hold buffers of this shape: next uploads use the lane
    computing, uploaded = threading.Event(), threading.Event()
    waited, results = [], {}

    def blocking(dev_, bufs):
        # shard 2 holds the compute stage until shard 3 is on the device: without the overlap shard 3's
        # upload would wait for this stage to end, and this wait would time out
        computing.set()
        waited.append(uploaded.wait(timeout=30))
        return _softmax(dev_, bufs)

    t = threading.Thread(target=lambda: results.setdefault(2, pipe.run(blocking, (x[2],), 2)))
    t.start()
    assert computing.wait(timeout=60)
    lane_upload = pipe._lane.upload

    def upload(buf, host):
        lane_upload(buf, host)
        uploaded.set()

    pipe._lane.upload = upload
    results[3] = pipe.run(_softmax, (x[3],), 3)
    t.join(60)
    assert waited == [True]
    for i in (2, 3):
        np.testing.assert_allclose(results[i], _softmax_np(x[i]), rtol=1e-5, atol=1e-7)
    pipe.close()


def _softmax_np(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_slots_follow_changing_shapes_and_dtypes(dev, rng):
    pipe = Pipeline(dev, depth=1)
    for shape, dtype in [((5, 3), np.float32), ((5, 3), np.float32), ((1, 1), np.float32), ((4, 9), np.float64),
                         ((4, 9), np.float64), ((2, 2), np.float32)]:
        if not dev.supports(dtype):
            continue
        x = rng.standard_normal(shape).astype(dtype)
        np.testing.assert_allclose(pipe.run(_softmax, (x,), 0), _softmax_np(x), rtol=1e-5, atol=1e-7)
    pipe.close()


def test_returning_an_input_or_host_arrays(dev, rng):
    pipe = Pipeline(dev, depth=1)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    y = rng.standard_normal(11).astype(np.float32)
    same = pipe.run(lambda d, bufs: bufs[0], (x,), 0)
    assert np.array_equal(same, x)
    view = pipe.run(lambda d, bufs: bufs[0].reshape(24), (x,), 0)
    assert np.array_equal(view, x.reshape(24))
    a, b, c = pipe.run(lambda d, bufs: [bufs[1], np.float32(2) * y, isthmus.ops.sum(bufs[1])], (x, y), 1)
    assert np.array_equal(a, y) and np.array_equal(b, 2 * y)
    np.testing.assert_allclose(c[0], y.sum(dtype=np.float64), rtol=1e-5, atol=1e-6)
    # the slot's buffers survived being returned: the next shard of these shapes is uploaded into them
    x2 = rng.standard_normal((3, 8)).astype(np.float32)
    assert np.array_equal(pipe.run(lambda d, bufs: bufs[0], (x2,), 2), x2)
    pipe.close()


def test_a_failing_task_gives_its_slot_back(dev, rng):
    pipe = Pipeline(dev, depth=1)
    x = rng.standard_normal((6, 6)).astype(np.float32)

    def fails(d, bufs):
        isthmus.ops.softmax(bufs[0])  # queued work on the slot's buffer, then an error
        raise RuntimeError("task failed")

    with pytest.raises(RuntimeError, match="task failed"):
        pipe.run(fails, (x,), 0)
    with pytest.raises(isthmus.InvalidArgumentError, match="returned a NoneType as result 0 of shard 1"):
        pipe.run(lambda d, bufs: None, (x,), 1)
    with pytest.raises(isthmus.InvalidArgumentError, match="returned no results for shard 2"):
        pipe.run(lambda d, bufs: (), (x,), 2)
    closed = dev.zeros(3, np.float32)
    closed.close()
    with pytest.raises(isthmus.ClosedBufferError):
        pipe.run(lambda d, bufs: closed, (x,), 3)
    np.testing.assert_allclose(pipe.run(_softmax, (x,), 4), _softmax_np(x), rtol=1e-5, atol=1e-7)
    pipe.close()
