"""Captured graphs (isthmus.graph): record once, replay with one call, update where allowed."""
import threading

import numpy as np
import pytest

import isthmus

SRC = """
__kernel void affine(const long n, const float a, __global const float* x, __global float* y)
{
    const long i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _cfg(n, wg=16):
    return isthmus.LaunchConfig((-(-n // wg) * wg,), (wg,))


@pytest.fixture
def affine(dev):
    return dev.compile(SRC, "affine")


def test_capture_records_without_running_then_replays(dev, rng, affine):
    n = 1001
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y, z = dev.asarray(xh), dev.asarray(yh), dev.asarray(np.full(n, np.nan, np.float32))
    plan = affine.prepare(n, 0.5, y, x, config=_cfg(n))  # x += 0.5 y
    with dev.capture() as graph:
        affine(n, 2.0, x, y, config=_cfg(n))            # y += 2 x
        plan.launch()
        isthmus.ops.axpy(-1.0, y, x)                     # x -= y
        zc = x.copy()
        zz = dev.zeros(n, np.float32)
    assert len(graph) == 5 and len(graph.plans) == 3
    np.testing.assert_array_equal(y.to_numpy(), yh)    # nothing ran while capturing
    np.testing.assert_array_equal(x.to_numpy(), xh)
    ex, ey = xh.copy(), yh.copy()
    for _ in range(2):
        graph.launch()
        ey = ey + np.float32(2) * ex
        ex = ex + np.float32(0.5) * ey
        ex = ex - ey
    np.testing.assert_allclose(y.to_numpy(), ey, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.to_numpy(), ex, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(zc.to_numpy(), ex, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(zz.to_numpy(), np.zeros(n, np.float32))
    del z


def test_graph_bind_updates_scalars_and_same_shape_buffers(dev, rng, affine):
    n = 37
    xh = rng.standard_normal(n).astype(np.float32)
    x, y = dev.asarray(xh), dev.zeros(n, np.float32)
    plan = affine.prepare(n, 1.0, x, y, config=_cfg(n))
    with dev.capture() as graph:
        plan.launch()
    plan.bind("a", 100.0)  # the graph took its own copy of the arguments when it captured
    graph.bind(0, "a", 3.0)
    graph.launch()
    np.testing.assert_allclose(y.to_numpy(), 3 * xh, rtol=1e-6, atol=1e-6)
    y2 = dev.zeros(n, np.float32)
    graph.bind(0, "y", y2).launch()
    np.testing.assert_allclose(y2.to_numpy(), 3 * xh, rtol=1e-6, atol=1e-6)
    with pytest.raises(isthmus.InvalidArgumentError, match="same shape"):
        graph.bind(0, "y", dev.zeros(n + 1, np.float32))
    with pytest.raises(isthmus.InvalidArgumentError, match="out of range"):
        graph.bind(1, "a", 1.0)
    with pytest.raises(isthmus.InvalidArgumentError, match="float32"):
        graph.bind(0, "y", dev.zeros(n, np.int32))


def test_closed_buffer_in_graph_is_an_error(dev, rng, affine):
    n = 8
    x, y = dev.asarray(rng.standard_normal(n).astype(np.float32)), dev.zeros(n, np.float32)
    with dev.capture() as graph:
        affine(n, 1.0, x, y, config=_cfg(n))
    x.close()
    with pytest.raises(isthmus.ClosedBufferError, match="graph step 0 .*x"):
        graph.launch()


def test_scratch_buffers_closed_inside_capture_belong_to_the_graph(dev, rng):
    n = 5000
    xh = rng.standard_normal(n).astype(np.float32)
    x = dev.asarray(xh)
    before = isthmus.live_buffers()
    with dev.capture() as graph:
        s = isthmus.ops.sum(x)  # a scratch buffer, closed by the op
    graph.launch()
    np.testing.assert_allclose(s.to_numpy()[0], xh.sum(dtype=np.float64), rtol=1e-4, atol=1e-3)
    graph.close()
    s.close()
    assert isthmus.live_buffers() == before


def test_host_transfers_cannot_be_captured(dev, affine):
    x = dev.zeros(4, np.float32)
    graph = dev.capture()
    with pytest.raises(isthmus.InvalidArgumentError, match="cannot be captured"):
        with graph:
            x.to_numpy()
    with pytest.raises(isthmus.InvalidArgumentError, match="capture block raised"):
        graph.launch()
    for bad in (lambda: x.copy_from(np.ones(4, np.float32)), dev.synchronize):
        with pytest.raises(isthmus.InvalidArgumentError, match="cannot be captured"):
            with dev.capture():
                bad()
    assert dev._recorder is None and "_launch" not in vars(dev)  # nothing patched, nothing left installed


def test_capture_misuse_is_an_error(dev, affine):
    x, y = dev.zeros(4, np.float32), dev.zeros(4, np.float32)
    with dev.capture() as graph:
        with pytest.raises(isthmus.InvalidArgumentError, match="do not nest"):
            with dev.capture():
                pass
        with pytest.raises(isthmus.InvalidArgumentError, match="being captured"):
            graph.launch()
        affine(4, 1.0, x, y, config=_cfg(4))
    with pytest.raises(isthmus.InvalidArgumentError, match="already captured"):
        with graph:
            pass
    with dev.capture() as empty:
        pass
    empty.launch()  # an empty graph replays nothing


def test_other_threads_are_not_captured(dev, rng, affine):
    n = 16
    xh = rng.standard_normal(n).astype(np.float32)
    x, y = dev.asarray(xh), dev.zeros(n, np.float32)
    with dev.capture() as graph:
        t = threading.Thread(target=lambda: affine(n, 1.0, x, y, config=_cfg(n)))
        t.start()
        t.join()
    assert len(graph) == 0
    np.testing.assert_allclose(y.to_numpy(), xh, rtol=1e-6, atol=1e-6)


_DIRTY_COPY = """
__kernel void dirty(__global uchar* t) { t[get_global_id(0)] = (uchar)(get_global_id(0) + 1); }
__kernel void take(__global const uchar* t, __global uchar* y) { y[get_global_id(0)] = t[get_global_id(0)]; }
"""


def test_zeroed_temporaries_are_zero_at_every_call_and_every_replay(dev):
    """Device._temporary(n, zeroed=True): the calling thread's scratch, filled with zeros before the
    call's launches (what a kernel left there before does not show); inside a capture, memory of
    the graph's own whose fill is a step of the graph, so each replay starts from zeros too."""
    n = 64
    dirty, take = dev.compile(_DIRTY_COPY, "dirty"), dev.compile(_DIRTY_COPY, "take")
    cfg = isthmus.LaunchConfig((n,))
    y = dev.asarray(np.full(n, 7, np.uint8))

    def call():
        t = dev._temporary(n, zeroed=True)
        dev.launch(take, (n,), None, [t, y])

    dev.launch(dirty, (n,), None, [dev._temporary(n)])  # the thread's scratch, dirtied
    call()
    assert y.to_numpy().tolist() == [0] * n
    with dev.capture() as graph:
        t = dev._temporary(n, zeroed=True)
        take(t, y, config=cfg)
        dirty(t, config=cfg)  # this replay's dirt: the next replay must not see it
    try:
        assert len(graph.steps) == 3  # fill, take, dirty
        y.copy_from(np.full(n, 7, np.uint8))
        for _ in range(2):
            graph.launch()
            assert y.to_numpy().tolist() == [0] * n
    finally:
        graph.close()


def test_graph_bind_all_updates_a_parameter_in_every_launch_that_has_it(dev, rng, affine):
    """bind_all(name, value): each captured launch with a parameter of that name, whatever its step
    (an op's several launches, or user kernels); launches without one are left alone."""
    n = 53
    xh = rng.standard_normal(n).astype(np.float32)
    x, y, z = dev.asarray(xh), dev.zeros(n, np.float32), dev.zeros(n, np.float32)
    with dev.capture() as graph:
        affine(n, 1.0, x, y, config=_cfg(n))
        isthmus.ops.scale(2.0, x, out=z)           # no parameter `a`: untouched
        affine(n, 1.0, x, y, config=_cfg(n))
    assert graph.bind_all("a", 0.5) is graph
    graph.launch()
    np.testing.assert_allclose(y.to_numpy(), xh, rtol=1e-6, atol=1e-6)  # 0.5 x twice
    np.testing.assert_allclose(z.to_numpy(), 2 * xh, rtol=1e-6)
    y2 = dev.zeros(n, np.float32)
    graph.bind_all("y", y2).launch()
    np.testing.assert_allclose(y2.to_numpy(), xh, rtol=1e-6, atol=1e-6)
    with pytest.raises(isthmus.InvalidArgumentError, match="no launch of this graph has a parameter 'b'; .* a, "):
        graph.bind_all("b", 1.0)
    with pytest.raises(isthmus.InvalidArgumentError, match="same shape"):
        graph.bind_all("y", dev.zeros(n + 1, np.float32))
