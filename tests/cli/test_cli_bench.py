"""isthmus bench's host-overhead table: the library call, with and without out=, against the
direct call of the same launches."""
import numpy as np

from isthmus import ops
from isthmus.cli import bench
from isthmus.ops.registry import OPS
from isthmus.ops.workloads import standard


def test_recording_sees_every_launch_and_its_replay_computes_the_same(dev):
    x = dev.asarray(np.arange(5003, dtype=np.float32))
    with bench.recording(dev) as rec:  # a first call (its partials closed and kept), then one from the recipe
        first = ops.sum(x)
        s = ops.sum(x)
    assert [k.name for k, *_ in rec.launches] == ["reduce_first", "reduce_final"] * 2
    assert dev._recorder is None and "_launch" not in dev.__dict__  # the recorder is gone, nothing was patched
    s.copy_from(np.zeros(1, np.float32))
    bench.DirectCalls(dev, rec)()
    assert s.to_numpy()[0] == first.to_numpy()[0] == np.arange(5003, dtype=np.float64).sum()


def test_overhead_rows_have_the_allocating_and_the_out_call(dev):
    rows = {r["op"]: r for r in bench.overhead(dev, calls=3, rounds=1)}
    # (an op returning several buffers, kv_append's caches, merge_attention_states' (o, lse), takes
    # them through several parameters: no single out= to time)
    several = {w.op for w in standard("tiny") if isinstance(w.call(*w.make(dev)), tuple)}
    assert set(rows) == set(OPS)  # every library op, read from the registry
    for op, r in rows.items():
        assert r["isthmus_us"] > 0 and r["direct_us"] > 0 and r["launches"] >= 1
        # an op that works in place (axpy) has no out= variant; the table says "in place" from the spec
        assert ("isthmus_out_us" in r) == (OPS[op].has_out and op not in several)
        assert r["in_place"] == bool(OPS[op].in_place)
    assert rows["axpy"]["in_place"] and not rows["scale"]["in_place"]
    assert rows["sum"]["launches"] == rows["max"]["launches"] == 2 and rows["scale"]["launches"] == 1
    table = bench.markdown({"device": dev.info(), "machine": bench.machine(), "sizes": {}, "copy_GBps": 1.0,
                            "kernels": [], "overhead": list(rows.values()), "date": "today"})
    assert "| axpy | 1 |" in table and "in place" in table
