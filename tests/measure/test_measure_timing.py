"""isthmus.measure.timing: the statistics, the clocks' protocol (warm-up, batches, alternating
rounds) and the copy ceiling."""
import numpy as np
import pytest

import isthmus
from isthmus import measure
from isthmus.errors import InvalidArgumentError


class CountingClock:
    """A clock whose timer reports 1 ms per call of ``fn`` made inside the timed block, so the
    arithmetic of device_times is checked exactly (the real clocks are tested on a device below)."""

    def __init__(self, log: list):
        self.log = log
        self.syncs = 0

    def synchronize(self):
        self.syncs += 1
        self.log.append("sync")

    def timer(self):
        clock = self

        class Block:
            def __enter__(self):
                self.start = len(clock.log)
                return self

            def __exit__(self, *exc):
                self.ms = float(sum(1 for e in clock.log[self.start:] if e == "call"))
                return False
        return Block()


def test_sample_statistics_match_numpy_on_random_timings(rng):
    times = list(rng.uniform(0.5, 3.0, size=int(rng.integers(1, 40))))
    s = measure.Sample.of(times)
    assert s.median == pytest.approx(float(np.median(times)))
    assert (s.low, s.high, s.n) == (min(times), max(times), len(times))
    assert s.spread == pytest.approx((max(times) - min(times)) / np.median(times))
    assert s.as_dict() == {"median": s.median, "low": s.low, "high": s.high, "n": s.n, "spread": s.spread}
    assert measure.Sample.of([2.0]).spread == 0.0


def test_sample_of_nothing_is_a_typed_error():
    with pytest.raises(InvalidArgumentError, match="at least one"):
        measure.Sample.of([])


def test_device_times_warms_up_synchronizes_then_times_batches():
    log: list = []
    clock = CountingClock(log)
    s = measure.device_times(clock, lambda: log.append("call"), repeat=4, warmup=3, batch=5)
    assert log[:4] == ["call"] * 3 + ["sync"]  # warm-up calls, then a wait, before anything is timed
    assert log.count("call") == 3 + 4 * 5
    assert (s.median, s.n) == (1.0, 4)  # 5 calls per block, each 1 ms: per-call time is 1 ms


@pytest.mark.parametrize("kwargs", [{"repeat": 0}, {"batch": 0}, {"warmup": -1}, {"repeat": 1.5}])
def test_device_times_rejects_bad_counts(kwargs):
    with pytest.raises(InvalidArgumentError, match="must be an integer"):
        measure.device_times(measure.WallClock(), lambda: None, **kwargs)


def test_interleaved_alternates_the_candidates_round_by_round():
    order = []
    rounds = {name: (lambda name=name: order.append(name) or float(len(order))) for name in "abc"}
    t = measure.interleaved(rounds, rounds=3)
    assert "".join(order) == "abcabcabc"
    assert (t["a"].low, t["a"].median, t["a"].high) == (1.0, 4.0, 7.0)
    with pytest.raises(InvalidArgumentError):
        measure.interleaved(rounds, rounds=0)


def test_per_call_times_divides_by_calls_and_launches_per_call():
    ticks = iter(range(0, 1000, 10))  # each clock read 10 s after the last: every round takes 10 s
    syncs = []
    s = measure.per_call_times(lambda: None, 4, sync=lambda: syncs.append(1), rounds=3, warmup=2, per_call=5,
                               clock=lambda: next(ticks))
    assert s.median == pytest.approx(10 / (4 * 5) * 1e6) and s.n == 3
    assert len(syncs) == 1 + 3  # after the warm-up, and after each round (outside the timed loop)


def test_wall_clock_includes_the_work_it_waits_for():
    waited = []
    clock = measure.WallClock(lambda: waited.append(1))
    with clock.timer() as t:
        pass
    assert waited == [1, 1] and t.ms >= 0  # a wait before the start and one before the end


def test_device_events_time_a_real_launch(dev, rng):
    x = dev.asarray(rng.standard_normal(1 << 16).astype(np.float32))
    y = dev.empty(1, np.float32)
    s = measure.device_times(dev, lambda: isthmus.ops.sum(x, out=y), repeat=5, warmup=1, batch=2)
    assert s.n == 5 and 0 < s.low <= s.median <= s.high
    assert y.to_numpy()[0] == pytest.approx(x.to_numpy().astype(np.float64).sum(), rel=1e-4)
    assert measure.device_ms(dev, lambda: isthmus.ops.sum(x, out=y), repeat=3) > 0


def test_queue_clock_times_with_opencl_profiling(dev):
    if dev.backend != "opencl":
        pytest.skip("OpenCL profiling markers: an OpenCL device")
    import pyopencl as cl

    queue = cl.CommandQueue(dev.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    host = np.random.default_rng().standard_normal(1 << 18).astype(np.float32)
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, host.nbytes)
    s = measure.device_times(measure.QueueClock(queue), lambda: cl.enqueue_copy(queue, buf, host), repeat=3)
    assert s.n == 3 and s.median > 0


def test_copy_bandwidth_is_positive_and_leaves_no_buffer(dev):
    before = isthmus.live_buffers()
    gbs = measure.copy_bandwidth(dev, 1 << 20, repeat=3)
    assert gbs > 0 and np.isfinite(gbs)
    assert isthmus.live_buffers() == before
    with pytest.raises(InvalidArgumentError, match="at least 4 bytes"):
        measure.copy_bandwidth(dev, 2)
