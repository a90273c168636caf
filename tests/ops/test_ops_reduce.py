"""sum and max: every layout forced explicitly (the tuner's way, ``forced``) -- strided loads (GPUs),
a contiguous chunk per work-item (CPUs) and that chunk read as OpenCL vectors (CPUs) -- at odd
lengths (a vector's tail, fewer elements than work-items), in every dtype, into poisoned outputs,
against NumPy; NaN where max meets it in the vector body, its tail and the partials; integer sums
past 32 bits in NumPy's result dtype (int64, uint64), wrapping only at 64 bits as NumPy's; and the
restrictions that keep the vector layout to CPU devices."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced
from isthmus.ops.specs.reduce import MAX, SUM

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8")
SPECS = {"sum": (SUM,), "max": (MAX,)}
# Forced configs of each layout (complete: every tunable). VPT 4..64: one vector of 4, 8 or 16
# lanes, or 2 and 4 vectors of 16; GROUPS * WG items, most of them idle at the short lengths.
LAYOUTS = {
    0: [{"WG": 64, "VPT": 8, "GROUPS": 16, "LAYOUT": 0}, {"WG": 8, "VPT": 1, "GROUPS": 3, "LAYOUT": 0}],
    1: [{"WG": 16, "VPT": 16, "GROUPS": 16, "LAYOUT": 1}, {"WG": 8, "VPT": 2, "GROUPS": 1, "LAYOUT": 1}],
    2: [{"WG": 16, "VPT": 64, "GROUPS": 16, "LAYOUT": 2}, {"WG": 8, "VPT": 4, "GROUPS": 2, "LAYOUT": 2},
        {"WG": 8, "VPT": 8, "GROUPS": 1, "LAYOUT": 2}, {"WG": 16, "VPT": 16, "GROUPS": 64, "LAYOUT": 2},
        {"WG": 32, "VPT": 32, "GROUPS": 8, "LAYOUT": 2}],
}
# 1, 2, 3, just around a vector and a step of 64, primes, a length whose chunks end mid-vector
LENGTHS = [1, 2, 3, 15, 17, 63, 65, 1031, 65537, 300007]


def _need(dev, dtype, layout):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    if layout == 2 and dev.backend == "cuda":  # OpenCL C vectors: CPU devices' layout (the spec's restriction)
        pytest.skip("the vector layout is OpenCL C only")


def _data(rng, n, dtype):
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        return (rng.standard_normal(n) * 8).astype(BF16 if dtype == "bfloat16" else dtype)
    hi = 256 if dtype == "uint8" else 1 << 30
    return rng.integers(0 if dtype == "uint8" else -hi, hi, n).astype(dtype)


def _run(dev, op, params, x):
    spec = SPECS[op][0]
    dtype = getattr(np, op)(x[:1]).dtype  # NumPy's result dtype
    out = dev.asarray(np.full(1, 77, dtype))  # poisoned: a result that is not written stays 77
    with forced(spec, params):
        assert getattr(isthmus.ops, op)(dev.asarray(x), out=out) is out
    return out.to_numpy()


def _check(got, x, op, what):
    ref = SPECS[op][0].sample_expect(x, exact=True)  # the reference in float64, rounded to x.dtype (ints: exact)
    assert got.shape == (1,) and got.dtype == getattr(np, op)(x).dtype == ref.dtype, what
    if op == "max" or x.dtype.kind in "iu":  # exact: max picks an element, integer sums wrap exactly
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    tol = {"float16": 2e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-14}[str(x.dtype)]
    scale = np.abs(x.astype(np.float64)).sum() or 1.0  # relative to the sum of magnitudes
    assert abs(float(got[0]) - float(ref[0])) <= tol * (scale + abs(float(ref[0]))), (what, got, ref)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("op", sorted(SPECS))
def test_every_layout_at_odd_lengths(dev, rng, op, layout):
    _need(dev, "float32", layout)
    for params, n in itertools.product(LAYOUTS[layout], LENGTHS):
        x = _data(rng, n, "float32")
        _check(_run(dev, op, params, x), x, op, f"{op} {params} n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("op", sorted(SPECS))
def test_every_layout_in_every_dtype(dev, rng, op, layout, dtype):
    _need(dev, dtype, layout)
    for params, n in itertools.product(LAYOUTS[layout][:1], (3, 1031, 65537)):
        x = _data(rng, n, dtype)
        _check(_run(dev, op, params, x), x, op, f"{op} {dtype} {params} n={n}")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_integer_sums_are_numpys_past_32_bits(dev, rng, layout):
    """NumPy sums int32 into int64 and uint8 into uint64: sums far past the input type's range (and
    past 32 bits) are exact, in that dtype, with the library's own output and with out=."""
    for params, dtype in itertools.product(LAYOUTS[layout], ("int32", "uint8")):
        _need(dev, dtype, layout)
        info = np.iinfo(dtype)
        n = 300007 if dtype == "int32" else 17_000_017  # uint8: 255 * n > 2**32
        x = rng.integers(info.max - 3, info.max, n, dtype=dtype, endpoint=True)
        x[rng.integers(0, n, 5)] = info.min  # a few of the lowest value among them
        want = x.sum()
        assert want > np.iinfo(np.uint32).max and want.dtype in (np.int64, np.uint64)
        got = _run(dev, "sum", params, x)
        _check(got, x, "sum", f"{dtype} {params}")
        assert got[0] == want, (dtype, params, got, want)
    if layout == 0:  # the op as users call it, with no config forced: a new result and a negative sum
        x = np.full(4099, np.iinfo(np.int32).min, np.int32)
        s = isthmus.ops.sum(dev.asarray(x))
        assert s.dtype == np.int64 and s.to_numpy()[0] == 4099 * -(2**31)


def test_int64_sums_wrap_like_numpys(dev, rng):
    x = np.full(4099, np.iinfo(np.int64).max, np.int64)  # overflows many times: NumPy wraps modulo 2**64
    for params in (LAYOUTS[0][0], LAYOUTS[1][0]):
        _check(_run(dev, "sum", params, x), x, "sum", f"int64 wrap {params}")


def test_sum_out_must_have_the_result_dtype(dev):
    x = dev.asarray(np.arange(10, dtype=np.int32))
    with pytest.raises(isthmus.InvalidArgumentError, match="out has dtype int32, the result is int64"):
        isthmus.ops.sum(x, out=dev.zeros(1, np.int32))
    with pytest.raises(isthmus.InvalidArgumentError, match="result is uint64"):
        isthmus.ops.sum(dev.asarray(np.arange(10, dtype=np.uint8)), out=dev.zeros(1, np.int64))
    assert isthmus.ops.max(x).dtype == np.int32  # max keeps the dtype, as NumPy's
    empty = isthmus.ops.sum(dev.empty(0, np.uint8))
    assert empty.dtype == np.uint64 and empty.to_numpy()[0] == 0


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_max_propagates_nan_and_infinities(dev, rng, layout, dtype):
    _need(dev, dtype, layout)
    n = 65537
    for params in LAYOUTS[layout] if dtype == "float32" else LAYOUTS[layout][:1]:
        # the first element, one in a vector's middle, the last (a chunk's scalar tail)
        for pos in (0, 12345, n - 1):
            x = _data(rng, n, dtype)
            x[pos] = np.nan
            got = _run(dev, "max", params, x)
            assert np.isnan(got[0].astype(np.float64)), f"{params} NaN at {pos}: got {got}"
        x = _data(rng, n, dtype)
        x[777] = np.inf
        _check(_run(dev, "max", params, x), x, "max", f"{params} +inf")
        x = np.full(n, -np.inf, x.dtype)  # nothing above the identity
        _check(_run(dev, "max", params, x), x, "max", f"{params} all -inf")


def test_max_finds_the_extreme_in_each_lane(dev, rng):
    """The largest element in each of the 16 lanes of a vector in turn, and in each of a step's
    four vectors: a lane or accumulator the horizontal combine missed would lose it."""
    for params in LAYOUTS[2]:
        _need(dev, "float32", 2)
        for pos in range(64):
            x = -rng.random(1031).astype(np.float32) - 1
            x[pos] = 3.0
            assert _run(dev, "max", params, x)[0] == 3.0, (params, pos)


class _Device:
    """A stand-in with the limits the restrictions read (Device declares them)."""

    local_mem_optin = None
    wgmma = False

    def __init__(self, kind):
        self.kind, self.max_work_group_size, self.local_mem_size = kind, 1024, 49152


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
def test_vector_layout_is_for_cpus_only(dtype):
    dt, cpu, gpu = lookup(dtype), _Device("cpu"), _Device("gpu")
    for spec in (SUM, MAX):
        config = {"WG": 16, "VPT": 64, "GROUPS": 16, "LAYOUT": 2}
        assert spec.is_valid(config, cpu, {"n": 1 << 22}, dt)
        assert not spec.is_valid(config, gpu, {"n": 1 << 22}, dt)  # CUDA's prelude has no float16
        assert not spec.is_valid({**config, "LAYOUT": 1}, cpu, {"n": 1 << 22}, dt)  # 64 scalar registers
        assert not spec.is_valid({**config, "VPT": 2}, cpu, {"n": 1 << 22}, dt)  # no vector of one lane
        assert spec.defaults(cpu)["LAYOUT"] == 2 and spec.defaults(gpu)["LAYOUT"] == 0
        assert all(p["LAYOUT"] < 2 and p["VPT"] <= 16 for p in spec.space(gpu, {"n": 1 << 20}, dt))
