"""isthmus.ops.rmsnorm: against a float64 NumPy reference written here, at odd widths and ranks,
with and without the fused residual add (residual += x in place, the sum normalized), Gemma's
offset, into poisoned outputs, in place over x, over the GPU layout's configs on this device, in a
captured graph (eps rebound without re-capture), and each bad argument's typed error."""
from __future__ import annotations

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced, forget_resolved
from isthmus.ops.specs.rmsnorm import SPEC

# relative error allowed per element (of the result's magnitude), by dtype: a few units of rounding
RTOL = {"float32": 2e-6, "float64": 1e-13, "float16": 2e-3, "bfloat16": 1.6e-2}


def _draw(rng, shape, dtype):
    return rng.standard_normal(shape).astype(lookup(dtype).np)


def _expect(x, w, eps, residual=None, offset=0.0):
    """(result, residual after the call) in float64, rounded to x's dtype."""
    dt = x.dtype
    s = x.astype(np.float64)
    r_after = None
    if residual is not None:
        r_after = (residual.astype(np.float64) + s).astype(dt)
        s = r_after.astype(np.float64)
    inv = 1.0 / np.sqrt((s * s).mean(axis=-1, keepdims=True) + eps)
    return (s * inv * (offset + w.astype(np.float64))).astype(dt), r_after


def _close(got, want, dtype):
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    bound = RTOL[dtype] * (np.abs(want64) + np.abs(want64).max() * 1e-3) + 1e-30
    bad = ~(np.abs(got64 - want64) <= bound)
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, e.g. got {got64[bad][:4]} want {want64[bad][:4]}"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1,), (3, 7), (13, 1000), (2, 3, 4097), (2, 2, 3, 64), (1, 65537)])
@pytest.mark.parametrize("fused", [False, True])
def test_rmsnorm_matches_float64_at_odd_widths_and_ranks(dev, rng, dtype, shape, fused):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    x, w = _draw(rng, shape, dtype), _draw(rng, shape[-1], dtype)
    r = _draw(rng, shape, dtype) if fused else None
    eps, offset = float(rng.uniform(1e-6, 1e-2)), float(rng.choice([0.0, 1.0]))
    want, r_want = _expect(x, w, eps, r, offset)
    out = dev.asarray(np.full(shape, np.nan, x.dtype))  # poisoned
    rb = None if r is None else dev.asarray(r)
    assert isthmus.ops.rmsnorm(dev.asarray(x), dev.asarray(w), eps, rb, offset, out=out) is out
    _close(out.to_numpy(), want, dtype)
    if fused:
        np.testing.assert_array_equal(rb.to_numpy(), r_want)  # residual += x, rounded once
    y = isthmus.ops.rmsnorm(dev.asarray(x), dev.asarray(w), eps=eps, offset=offset,
                            residual=None if r is None else dev.asarray(r))
    assert y.shape == shape and y.dtype == x.dtype
    _close(y.to_numpy(), want, dtype)


# Configs of the GPU layout run here too: vectors of 1-8 elements, nothing/part/all held, rows to a
# group; at a width the vectors divide (1024) and one they do not (1031: element by element)
CONFIGS = [dict(LAYOUT=0, WG=32, RPG=1, VPT=1, CACHE=0), dict(LAYOUT=0, WG=64, RPG=2, VPT=4, CACHE=8),
           dict(LAYOUT=0, WG=256, RPG=1, VPT=8, CACHE=1), dict(LAYOUT=0, WG=128, RPG=1, VPT=2, CACHE=2),
           dict(LAYOUT=0, WG=256, RPG=8, VPT=8, CACHE=4), dict(LAYOUT=1, WG=4, RPG=1, VPT=4, CACHE=4),
           # teams of 1, 16 and 1024 items (CUDA: no reduction, shuffles within a warp, across 32 warps)
           dict(LAYOUT=0, WG=32, RPG=32, VPT=8, CACHE=4), dict(LAYOUT=0, WG=64, RPG=4, VPT=4, CACHE=8),
           dict(LAYOUT=0, WG=1024, RPG=1, VPT=2, CACHE=16), dict(LAYOUT=1, WG=16, RPG=1, VPT=4, CACHE=4)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_every_layout_and_vector_width_is_correct_with_and_without_the_residual(dev, rng, dtype, params):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    dt = lookup(dtype)
    forget_resolved()
    try:
        for rows, cols in [(37, 1024), (5, 1031), (3, 16), (37, 301)]:
            if not SPEC.is_valid(params, dev, {"rows": rows, "cols": cols}, dt):
                continue
            x, w, r = _draw(rng, (rows, cols), dtype), _draw(rng, cols, dtype), _draw(rng, (rows, cols), dtype)
            want, r_want = _expect(x, w, 1e-5, r, 1.0)
            rb = dev.asarray(r)
            with forced(SPEC, params):
                y = isthmus.ops.rmsnorm(dev.asarray(x), dev.asarray(w), 1e-5, rb, 1.0)
                y0 = isthmus.ops.rmsnorm(dev.asarray(x), dev.asarray(w), 1e-5)
            _close(y.to_numpy(), want, dtype)
            np.testing.assert_array_equal(rb.to_numpy(), r_want)
            _close(y0.to_numpy(), _expect(x, w, 1e-5)[0], dtype)
    finally:
        forget_resolved()


def test_the_fused_add_updates_the_residual_in_place_and_may_write_over_x(dev, rng):
    """vLLM's fused_add_rms_norm: residual = x + residual, x = rmsnorm(residual); called again, the
    residual keeps accumulating."""
    x, w, r = _draw(rng, (4, 3, 512), "float32"), _draw(rng, 512, "float32"), _draw(rng, (4, 3, 512), "float32")
    xb, rb = dev.asarray(x), dev.asarray(r)
    assert isthmus.ops.rmsnorm(xb, dev.asarray(w), 1e-6, rb, out=xb) is xb
    want, r1 = _expect(x, w, 1e-6, r)
    _close(xb.to_numpy(), want, "float32")
    np.testing.assert_array_equal(rb.to_numpy(), r1)
    isthmus.ops.rmsnorm(dev.asarray(x), dev.asarray(w), 1e-6, rb)
    np.testing.assert_array_equal(rb.to_numpy(), (r1 + x))
    y = isthmus.ops.rmsnorm(xb, dev.asarray(w), out=xb)  # in place without a residual
    _close(y.to_numpy(), _expect(want, w, 1e-6)[0], "float32")


def test_inside_a_captured_graph_with_eps_and_offset_rebound_without_recapture(dev, rng):
    x, w, r = _draw(rng, (6, 300), "float32"), _draw(rng, 300, "float32"), _draw(rng, (6, 300), "float32")
    xb, wb, rb = dev.asarray(x), dev.asarray(w), dev.asarray(r)
    out = dev.zeros((6, 300), np.float32)
    with dev.capture() as graph:
        isthmus.ops.rmsnorm(xb, wb, 1e-6, rb, out=out)
    np.testing.assert_array_equal(rb.to_numpy(), r)  # captured, not run
    graph.launch()
    want, r1 = _expect(x, w, 1e-6, r)
    _close(out.to_numpy(), want, "float32")
    np.testing.assert_array_equal(rb.to_numpy(), r1)
    x2 = _draw(rng, (6, 300), "float32")
    xb.copy_from(x2)
    graph.bind(0, "eps", 0.5).bind(0, "offset", 1.0).launch()
    want2, r2 = _expect(x2, w, 0.5, r1, 1.0)
    _close(out.to_numpy(), want2, "float32")
    np.testing.assert_array_equal(rb.to_numpy(), r2)
    graph.close()


def test_empty_rows_and_empty_widths_launch_nothing(dev):
    assert isthmus.ops.rmsnorm(dev.zeros((0, 8), np.float32), dev.zeros(8, np.float32)).shape == (0, 8)
    assert isthmus.ops.rmsnorm(dev.zeros((4, 0), np.float32), dev.zeros(0, np.float32)).shape == (4, 0)


def test_each_bad_argument_is_a_typed_error_naming_it(dev):
    x, w, r = dev.zeros((4, 8), np.float32), dev.zeros(8, np.float32), dev.zeros((4, 8), np.float32)
    bad = [(lambda: isthmus.ops.rmsnorm(x, w, 1e-6, r, out=r), isthmus.InvalidArgumentError,
            "out shares memory with residual"),
           (lambda: isthmus.ops.rmsnorm(x, w, 1e-6, x), isthmus.InvalidArgumentError, "residual shares memory with x"),
           (lambda: isthmus.ops.rmsnorm(x, w, 1e-6, out=dev.zeros(8, np.float32)), isthmus.InvalidArgumentError,
            "out has shape"),
           (lambda: isthmus.ops.rmsnorm(x, x, 1e-6), isthmus.InvalidArgumentError,
            r"weight has shape \(4, 8\); it must be \(cols\) = \(8,\)"),
           (lambda: isthmus.ops.rmsnorm(x, dev.zeros(9, np.float32)), isthmus.InvalidArgumentError,
            r"weight has shape \(9,\)"),
           (lambda: isthmus.ops.rmsnorm(x, w, 1e-6, dev.zeros((4, 9), np.float32)), isthmus.InvalidArgumentError,
            r"residual has shape \(4, 9\); it must have x's shape \(4, 8\)"),
           (lambda: isthmus.ops.rmsnorm(x, w, -1e-6), isthmus.InvalidArgumentError,
            "eps = -1e-06 is out of range; it must be a finite number >= 0"),
           (lambda: isthmus.ops.rmsnorm(x, w, float("nan")), isthmus.InvalidArgumentError, "eps = nan"),
           (lambda: isthmus.ops.rmsnorm(x, w, "1e-6"), isthmus.InvalidArgumentError, "eps must be a real number"),
           (lambda: isthmus.ops.rmsnorm(x, w, offset=None), isthmus.InvalidArgumentError,
            "offset must be a real number"),
           (lambda: isthmus.ops.rmsnorm(x, dev.zeros(8, np.float64)), isthmus.InvalidArgumentError,
            "weight has dtype float64"),
           (lambda: isthmus.ops.rmsnorm(dev.zeros((4, 8), np.int32), dev.zeros(8, np.int32)),
            isthmus.UnsupportedDtypeError, "rmsnorm does not support int32"),
           (lambda: isthmus.ops.rmsnorm(dev.zeros((), np.float32), w), isthmus.InvalidArgumentError,
            "x must have at least 1 dimension"),
           (lambda: isthmus.ops.rmsnorm(np.zeros((4, 8), np.float32), w), isthmus.InvalidArgumentError,
            "x must be an isthmus Buffer")]
    for call, error, match in bad:
        with pytest.raises(error, match=match):
            call()
    w2 = dev.asarray(np.ones(8, np.float32))
    with pytest.raises(isthmus.InvalidArgumentError, match="out shares memory with weight"):
        isthmus.ops.rmsnorm(dev.zeros((1, 8), np.float32), w2, out=w2.reshape((1, 8)))
