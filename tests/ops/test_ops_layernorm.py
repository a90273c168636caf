"""isthmus.ops.layernorm: against a float64 NumPy reference written here, at odd widths and ranks,
with weight and bias each given or not (the plain form), with and without the fused residual add
(residual += x in place, the sum normalized), rows whose mean is far from 0 (the variance must not
cancel), into poisoned outputs, in place over x, over the GPU layout's configs on this device, in a
captured graph (eps rebound without re-capture), and each bad argument's typed error."""
from __future__ import annotations

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced, forget_resolved
from isthmus.ops.specs.layernorm import SPEC

# error allowed per element, by dtype, in units of the row's spread (the result's scale) and of its
# magnitude: a few units of rounding of the inputs (a mean of 100 in float32 holds 4e-6 of a unit)
RTOL = {"float32": 2e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}


def _draw(rng, shape, dtype, shift=0.0):
    return (rng.standard_normal(shape) + shift).astype(lookup(dtype).np)


def _expect(x, w, b, eps, residual=None):
    """(result, residual after the call) in float64, rounded to x's dtype."""
    dt = x.dtype
    s = x.astype(np.float64)
    r_after = None
    if residual is not None:
        r_after = (residual.astype(np.float64) + s).astype(dt)
        s = r_after.astype(np.float64)
    c = s - s.mean(axis=-1, keepdims=True)
    y = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w.astype(np.float64)
    if b is not None:
        y = y + b.astype(np.float64)
    return y.astype(dt), r_after


# and the rounding of the row's sum in the dtype's accumulator, relative to the spread: a mean
# `shift` spreads away from 0 makes it shift times larger (the condition of the centring)
UNIT = {"float32": 6e-8, "float64": 1.1e-16, "float16": 6e-8, "bfloat16": 6e-8}


def _spread(s, eps):
    """Each row's sqrt(variance + eps) of what is normalized (float64): the unit of the result, in which the
    centring's rounding (a few units of `shift`'s last place) is divided."""
    s = s.astype(np.float64)
    return np.sqrt(s.var(axis=-1, keepdims=True) + eps)


def _close(got, want, dtype, shift=0.0, spread=1.0):
    """``spread``: the rows' :func:`_spread` (a short row drawn with unit variance may have a tenth of it:
    the same rounding of its mean is then ten times larger in the result)."""
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    bound = (RTOL[dtype] + UNIT[dtype] * shift * np.sqrt(want.shape[-1]) / spread) * (np.abs(want64) + 1.0)
    bad = ~(np.abs(got64 - want64) <= bound)
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, e.g. got {got64[bad][:4]} want {want64[bad][:4]}"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1,), (3, 7), (13, 1000), (2, 3, 4097), (2, 2, 3, 64), (1, 65537)])
@pytest.mark.parametrize("form", ["weight+bias", "plain", "bias", "fused"])
def test_layernorm_matches_float64_at_odd_widths_and_ranks(dev, rng, dtype, shape, form):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    shift = 100.0 if dtype in ("float32", "float64") else 8.0  # (16-bit: what their mantissas hold)
    x = _draw(rng, shape, dtype, shift)
    w = _draw(rng, shape[-1], dtype) if form in ("weight+bias", "fused") else None
    b = _draw(rng, shape[-1], dtype) if form != "plain" else None
    r = _draw(rng, shape, dtype) if form == "fused" else None
    eps = float(rng.uniform(1e-6, 1e-2))
    want, r_want = _expect(x, w, b, eps, r)
    out = dev.asarray(np.full(shape, np.nan, x.dtype))  # poisoned
    dw, db, rb = (None if a is None else dev.asarray(a) for a in (w, b, r))
    assert isthmus.ops.layernorm(dev.asarray(x), dw, db, eps, rb, out=out) is out
    _close(out.to_numpy(), want, dtype, shift, _spread(x if r is None else r_want, eps))
    if form == "fused":
        np.testing.assert_array_equal(rb.to_numpy(), r_want)
    y = isthmus.ops.layernorm(dev.asarray(x), weight=dw, bias=db, eps=eps)
    assert y.shape == shape and y.dtype == x.dtype
    _close(y.to_numpy(), _expect(x, w, b, eps)[0], dtype, shift, _spread(x, eps))


CONFIGS = [dict(LAYOUT=0, WG=32, RPG=1, VPT=1, CACHE=0), dict(LAYOUT=0, WG=64, RPG=2, VPT=4, CACHE=8),
           dict(LAYOUT=0, WG=256, RPG=1, VPT=8, CACHE=1), dict(LAYOUT=0, WG=128, RPG=1, VPT=2, CACHE=2),
           dict(LAYOUT=0, WG=256, RPG=8, VPT=8, CACHE=4), dict(LAYOUT=1, WG=4, RPG=1, VPT=4, CACHE=4),
           # teams of 1, 16 and 1024 items (CUDA: no reduction, shuffles within a warp, across 32 warps)
           dict(LAYOUT=0, WG=32, RPG=32, VPT=8, CACHE=4), dict(LAYOUT=0, WG=64, RPG=4, VPT=4, CACHE=8),
           dict(LAYOUT=0, WG=1024, RPG=1, VPT=2, CACHE=16), dict(LAYOUT=1, WG=16, RPG=1, VPT=4, CACHE=4)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_every_layout_and_vector_width_is_correct_with_and_without_the_residual(dev, rng, dtype, params):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    dt = lookup(dtype)
    shift = 100.0 if dtype == "float32" else 4.0  # a mean far from 0: the variance must not cancel
    forget_resolved()
    try:
        for rows, cols in [(37, 1024), (5, 1031), (3, 16), (37, 301)]:
            if not SPEC.is_valid(params, dev, {"rows": rows, "cols": cols}, dt):
                continue
            x, w, b = _draw(rng, (rows, cols), dtype, shift), _draw(rng, cols, dtype), _draw(rng, cols, dtype)
            r = _draw(rng, (rows, cols), dtype)
            want, r_want = _expect(x, w, b, 1e-5, r)
            rb = dev.asarray(r)
            with forced(SPEC, params):
                y = isthmus.ops.layernorm(dev.asarray(x), dev.asarray(w), dev.asarray(b), 1e-5, rb)
                y0 = isthmus.ops.layernorm(dev.asarray(x))
            _close(y.to_numpy(), want, dtype, shift, _spread(r_want, 1e-5))
            np.testing.assert_array_equal(rb.to_numpy(), r_want)
            _close(y0.to_numpy(), _expect(x, None, None, 1e-5)[0], dtype, shift, _spread(x, 1e-5))
    finally:
        forget_resolved()


def test_a_constant_row_normalizes_to_the_bias_and_in_place_over_x(dev, rng):
    x = np.full((3, 257), 1234.5, np.float32)
    b = rng.standard_normal(257).astype(np.float32)
    xb = dev.asarray(x)
    assert isthmus.ops.layernorm(xb, None, dev.asarray(b), out=xb) is xb
    np.testing.assert_array_equal(xb.to_numpy(), np.broadcast_to(b, (3, 257)))


def test_inside_a_captured_graph_with_eps_rebound_without_recapture(dev, rng):
    x, w, r = _draw(rng, (6, 300), "float32", 3.0), _draw(rng, 300, "float32"), _draw(rng, (6, 300), "float32")
    xb, wb, rb = dev.asarray(x), dev.asarray(w), dev.asarray(r)
    out = dev.zeros((6, 300), np.float32)
    with dev.capture() as graph:
        isthmus.ops.layernorm(xb, wb, None, 1e-5, rb, out=out)
    graph.launch()
    want, r1 = _expect(x, w, None, 1e-5, r)
    _close(out.to_numpy(), want, "float32", 3.0, _spread(r1, 1e-5))
    np.testing.assert_array_equal(rb.to_numpy(), r1)
    x2 = _draw(rng, (6, 300), "float32")
    xb.copy_from(x2)
    graph.bind(0, "eps", 0.25).launch()
    want2, r2 = _expect(x2, w, None, 0.25, r1)
    _close(out.to_numpy(), want2, "float32")
    np.testing.assert_array_equal(rb.to_numpy(), r2)
    graph.close()


def test_each_bad_argument_is_a_typed_error_naming_it(dev):
    x, w, r = dev.zeros((4, 8), np.float32), dev.zeros(8, np.float32), dev.zeros((4, 8), np.float32)
    bad = [(lambda: isthmus.ops.layernorm(x, w, w, 1e-5, r, out=r), isthmus.InvalidArgumentError,
            "out shares memory with residual"),
           (lambda: isthmus.ops.layernorm(x, w, None, 1e-5, x), isthmus.InvalidArgumentError,
            "residual shares memory with x"),
           (lambda: isthmus.ops.layernorm(x, None, w, 1e-5, dev.asarray(np.zeros(8, np.float32)).reshape((1, 8))),
            isthmus.InvalidArgumentError, r"residual has shape \(1, 8\); it must have x's shape"),
           (lambda: isthmus.ops.layernorm(x, dev.zeros(9, np.float32)), isthmus.InvalidArgumentError,
            r"weight has shape \(9,\); it must be \(cols\) = \(8,\)"),
           (lambda: isthmus.ops.layernorm(x, None, dev.zeros(7, np.float32)), isthmus.InvalidArgumentError,
            r"bias has shape \(7,\)"),
           (lambda: isthmus.ops.layernorm(x, eps=-1.0), isthmus.InvalidArgumentError,
            "eps = -1 is out of range; it must be a finite number >= 0"),
           (lambda: isthmus.ops.layernorm(x, eps=float("inf")), isthmus.InvalidArgumentError, "eps = inf"),
           (lambda: isthmus.ops.layernorm(x, None, dev.zeros(8, np.float16)), isthmus.InvalidArgumentError,
            "bias has dtype float16"),
           (lambda: isthmus.ops.layernorm(dev.zeros((4, 8), np.int32)), isthmus.UnsupportedDtypeError,
            "layernorm does not support int32"),
           (lambda: isthmus.ops.layernorm(dev.zeros((), np.float32)), isthmus.InvalidArgumentError,
            "x must have at least 1 dimension"),
           (lambda: isthmus.ops.layernorm(x, [1.0] * 8), isthmus.InvalidArgumentError,
            "weight must be an isthmus Buffer")]
    for call, error, match in bad:
        with pytest.raises(error, match=match):
            call()
