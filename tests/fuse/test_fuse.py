"""Fused elementwise kernels (isthmus.fuse): one kernel, NumPy's types and values, clear errors."""
import numpy as np
import pytest

import isthmus
from isthmus.fuse import expr as fuse_expr
from isthmus.fuse import Fused

_TOL = {np.float16: (2e-2, 2e-2), np.float32: (2e-5, 1e-5), np.float64: (1e-12, 1e-12)}


def _host(rng, dt, n, positive=False):
    dt = np.dtype(dt)
    if dt.kind in "iu":
        return rng.integers(1 if positive else 0, 50, n).astype(dt)
    v = rng.uniform(0.1, 2.0, n) if positive else rng.standard_normal(n)
    return v.astype(dt)


def _check(dev, rng, expr, kinds, n, scalars=None, positive=False):
    f = isthmus.fuse(expr)
    host = {k: _host(rng, v, n, positive) for k, v in kinds.items()}
    host.update(scalars or {})
    args = {k: dev.asarray(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    ref = f.reference(**host)
    out = dev.asarray(np.full(n, np.nan if ref.dtype.kind == "f" else 77, ref.dtype))  # poisoned
    if f.output in f.inputs:
        res = f(**args)
    else:
        res = f(**args, out=out)
        assert res is out
        assert f(**args).dtype == ref.dtype  # allocated output has NumPy's result dtype
    got = res.to_numpy()
    if ref.dtype.kind == "f":
        # A float16 intermediate (rounded per operation, as NumPy does) can differ by one half ulp.
        low = np.float16 if any(np.dtype(v) == np.float16 for v in kinds.values()) else ref.dtype.type
        rtol, atol = _TOL[low]
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("n", [1, 7, 1001])
def test_the_issue_expression(dev, rng, n):
    f32 = np.float32
    _check(dev, rng, "out = a * x + b * tanh(y)", {"x": f32, "y": f32}, n,
           {"a": float(rng.uniform(-2, 2)), "b": float(rng.uniform(-2, 2))})


@pytest.mark.parametrize("expr,kinds,scalars,positive", [
    ("z = x * 3 + y", {"x": np.int32, "y": np.uint8}, {}, False),               # int32 + uint8 -> int32
    ("z = sqrt(x) + y / 2", {"x": np.int32, "y": np.float16}, {}, True),       # int sqrt -> float64
    ("z = x ** 3 - abs(y) * 2", {"x": np.int64, "y": np.int32}, {}, False),     # integer powers
    ("z = fmod(x, y) + fmax(x, y) - fmin(y, x)", {"x": np.int32, "y": np.int32}, {}, False),  # x % 0 is 0
    ("z = exp10(x) + rsqrt(y) + erf(x) - hypot(x, y)", {"x": np.float32, "y": np.float32}, {}, True),
    ("z = pow(x, y) + log1p(x) * atan2(y, x) - fma(x, y, x)", {"x": np.float64, "y": np.float64}, {}, True),
    ("z = -x + round(y) * c", {"x": np.float32, "y": np.float32}, {"c": np.float64(0.25)}, False),  # strong scalar
    ("z = x * k + 1", {"x": np.uint8}, {"k": 200}, False),                      # uint8 wraps like NumPy
    ("z = x / y", {"x": np.int64, "y": np.int64}, {}, True),                    # true division -> float64
    ("z = cbrt(x) + exp2(x) + log2(x) + floor(x) + ceil(x) + trunc(x)", {"x": np.float32}, {}, True),
    ("z = copysign(x, y) + sinh(x) + cosh(y) + asinh(x) + atan(y)", {"x": np.float32, "y": np.float16}, {}, False),
])
def test_expressions_match_numpy(dev, rng, expr, kinds, scalars, positive):
    _check(dev, rng, expr, kinds, 257, scalars, positive)


def test_in_place_and_promotion_of_scalars(dev, rng):
    n = 129
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y = dev.asarray(xh), dev.asarray(yh)
    f = isthmus.fuse("y = a * x + y")
    assert f(1.5, x, y) is y
    np.testing.assert_allclose(y.to_numpy(), np.float32(1.5) * xh + yh, rtol=1e-6, atol=1e-6)
    weak = isthmus.fuse("out = a * x")(2.0, x)
    strong = isthmus.fuse("out = a * x")(np.float64(2.0), x)
    assert weak.dtype == np.float32 and strong.dtype == np.float64  # NEP 50, like NumPy 2
    with pytest.raises(isthmus.InvalidArgumentError, match="do not pass out="):
        f(1.5, x, y, out=dev.empty(n, np.float32))


def test_cached_per_expression_and_dtypes(dev, rng):
    f = isthmus.fuse("out = x * x + 0.5")
    assert isthmus.fuse("out = x * x + 0.5") is f
    assert dev.fuse("out = x * x + 0.5") is dev.fuse("out = x * x + 0.5")
    x32 = dev.asarray(np.ones(5, np.float32))
    f(x32), f(x32)
    f(dev.asarray(np.ones(5, np.int32)))
    assert len([k for k in f._variants if k[0] == dev.id]) == 2  # the cache is shared by every device


def test_prepare_bind_and_capture(dev, rng):
    n = 100
    xh = rng.standard_normal(n).astype(np.float32)
    x = dev.asarray(xh)
    f = dev.fuse("out = a * x + 1")
    plan = f.prepare(2.0, x)
    plan.launch()
    np.testing.assert_allclose(plan.result.to_numpy(), 2 * xh + 1, rtol=1e-6, atol=1e-6)
    plan.bind("a", -3.0).launch()
    np.testing.assert_allclose(plan.result.to_numpy(), -3 * xh + 1, rtol=1e-6, atol=1e-6)
    out = dev.empty(n, np.float32)
    with dev.capture() as graph:
        f(4.0, x, out=out)
    graph.launch()
    np.testing.assert_allclose(out.to_numpy(), 4 * xh + 1, rtol=1e-6, atol=1e-6)
    assert f(1.0, dev.empty(0, np.float32)).size == 0


@pytest.mark.parametrize("expr,column,match", [
    ("out = a +* x", 10, "malformed"),
    ("out = a % x", 9, "operator '%'"),
    ("out = tanhh(x)", 7, "unknown function 'tanhh'"),
    ("out = x[0]", 7, "subscript"),
    ("a + b", 1, "one assignment"),
    ("out = exp + 1", 7, "is a function"),
    ("out = float + x", 7, "reserved"),
    ("out = x < y", 7, "compare"),
    ("out = sin(x, y)", 7, "takes 1 positional argument"),
    ("out = x + 'a'", 11, "not a real number"),
])
def test_malformed_expressions_name_the_column(expr, column, match):
    with pytest.raises(isthmus.InvalidArgumentError, match=match) as info:
        f = isthmus.fuse(expr)
        f._resolve(f._values([np.int32(1)] * len(f.inputs), {}), None)
    assert f"column {column}:" in str(info.value)


def test_call_errors(dev):
    f = isthmus.fuse("out = a * x + b * tanh(y)")
    x = dev.asarray(np.ones(5, np.float32))
    with pytest.raises(isthmus.InvalidArgumentError, match="column 24: no value for input 'y'"):
        f(1.0, x, 2.0)
    with pytest.raises(isthmus.InvalidArgumentError, match="column 24: 'y' has shape"):
        f(1.0, x, 2.0, dev.asarray(np.ones(4, np.float32)))
    with pytest.raises(isthmus.InvalidArgumentError, match="column 5: the result is float32.*int32"):
        f(1.0, x, 2.0, x, out=dev.empty(5, np.int32))
    with pytest.raises(isthmus.InvalidArgumentError, match="must be a Buffer or a real number"):
        f(1.0, x, 2.0, "y")
    with pytest.raises(isthmus.InvalidArgumentError, match="NumPy array"):
        f(1.0, x, 2.0, np.ones(5, np.float32))
    with pytest.raises(isthmus.InvalidArgumentError, match="no input 'q'"):
        f(1.0, x, 2.0, x, q=1)
    with pytest.raises(isthmus.InvalidArgumentError, match="given twice"):
        f(1.0, x, 2.0, x, a=1)
    with pytest.raises(isthmus.InvalidArgumentError, match="every input is a scalar"):
        f(1.0, 2.0, 3.0, 4.0)
    with pytest.raises(isthmus.InvalidArgumentError, match="does not fit"):
        isthmus.fuse("out = k * x")(2**40, dev.asarray(np.ones(3, np.int32)))
    with pytest.raises(isthmus.InvalidArgumentError, match="column 7: NumPy rejects"):
        isthmus.fuse("out = x ** -1")(dev.asarray(np.ones(3, np.int32)))
    with pytest.raises(isthmus.InvalidArgumentError, match="constant exponent"):
        isthmus.fuse("out = x ** k")(dev.asarray(np.ones(3, np.int32)), 2)
    closed = dev.asarray(np.ones(5, np.float32))
    closed.close()
    with pytest.raises(isthmus.ClosedBufferError):
        f(1.0, closed, 2.0, x)
    assert isinstance(f, Fused)


def test_float64_on_a_device_without_it_names_the_column(dev, monkeypatch):
    x = dev.asarray(np.ones(4, np.float32))
    monkeypatch.setattr(type(dev), "supports", lambda self, dt: np.dtype(dt) != np.float64)
    f = isthmus.fuse("out = x * 2 + sqrt(k)")  # a NumPy float64 scalar makes the sum float64
    with pytest.raises(isthmus.UnsupportedDtypeError, match="column 7: this computes in float64"):
        f(x, np.float64(4.0))
    g = isthmus.fuse("out = x * k + 1")
    assert g(x, 4.0).dtype == np.float32  # a weak Python float stays float32


@pytest.mark.parametrize("expr, column", [("ｏｕｔ = ａ + ｘ", 1), ("out = ａ * x + y", 7), ("out = x + ｙ", 11),
                                          ("out = x\ud800", 8), ("out = x * 2 + é", 15), ("out\u00a0= x", 4)])
def test_non_ascii_expressions_are_typed_errors_with_the_right_column(expr, column):
    with pytest.raises(isthmus.InvalidArgumentError, match="not ASCII") as info:
        isthmus.fuse(expr)
    assert info.value.column == column
    str(info.value).encode("utf-8")  # the message itself is printable


@pytest.mark.parametrize("expr", ["out = " + "+".join(["x"] * 20_000), "out = " + "-" * 5_000 + "x",
                                  "out = " + "+".join(["x"] * 400), "out = " + "exp(" * 300 + "x" + ")" * 300])
def test_very_long_or_deep_expressions_are_typed_errors(expr):
    with pytest.raises(isthmus.InvalidArgumentError, match="deep|nested"):
        isthmus.fuse(expr)


def test_a_long_expression_within_the_bound_runs(dev, rng):
    terms = fuse_expr.MAX_DEPTH - 6  # near the bound: still typed, evaluated and compiled
    f = isthmus.fuse("out = " + " + ".join(f"{(i % 7) + 1} * x" for i in range(terms)), dev)
    x = rng.standard_normal(33).astype(np.float32)
    out = f(dev.asarray(x))
    scale = sum((i % 7) + 1 for i in range(terms))
    np.testing.assert_allclose(out.to_numpy(), scale * x, rtol=1e-4, atol=1e-3)


def test_the_cache_of_fused_expressions_is_bounded(monkeypatch):
    """isthmus.fuse remembers expressions in a bounded LRU (ISTHMUS_PROGRAM_MEMO entries), not one
    entry per expression ever fused: a long-running process that builds expressions keeps few."""
    from isthmus.fuse import fused

    monkeypatch.setenv("ISTHMUS_PROGRAM_MEMO", "2")
    fused._cache.clear()
    first = isthmus.fuse("out = x + 1")
    assert isthmus.fuse("out = x + 1") is first  # remembered
    for k in range(2, 6):
        isthmus.fuse(f"out = x + {k}")
    assert len(fused._cache) == 2
    assert isthmus.fuse("out = x + 1") is not first  # dropped, least recently used first
