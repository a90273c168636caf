"""isthmus.ops.scale, the first op written as a spec file (ops/specs/scale.py) and its .cl: every
float dtype, odd sizes, in place and out=, poisoned outputs, typed errors."""
import numpy as np
import pytest

import isthmus
from isthmus import ops
from isthmus.dtypes import lookup
from isthmus.ops.specs.scale import reference

DTYPES = ("float32", "float64", "float16", "bfloat16")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 97, 1009, 65537])
def test_scale_matches_numpy(dev, rng, dtype, n):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    x = rng.standard_normal(n).astype(lookup(dtype).np)
    alpha = -1.75
    out = dev.asarray(np.full(n, np.nan, np.float32).astype(x.dtype))  # poisoned
    assert ops.scale(alpha, dev.asarray(x), out=out) is out
    np.testing.assert_array_equal(out.to_numpy(), reference(np, alpha, x))  # one rounding: exact
    np.testing.assert_array_equal(ops.scale(alpha, dev.asarray(x)).to_numpy(), reference(np, alpha, x))


def test_scale_in_place_and_of_a_2d_buffer(dev, rng):
    x = rng.standard_normal((7, 13)).astype(np.float32)
    b = dev.asarray(x)
    assert ops.scale(0.5, b, out=b) is b
    np.testing.assert_array_equal(b.to_numpy(), np.float32(0.5) * x)
    assert ops.scale(3.0, dev.zeros((0, 4), np.float32)).shape == (0, 4)


def test_scale_errors_are_typed_and_leave_nothing_behind(dev):
    x = dev.zeros(8, np.float32)
    before = isthmus.live_buffers()
    cases = [(lambda: ops.scale(2.0, np.zeros(8, np.float32)), "must be an isthmus Buffer"),
             (lambda: ops.scale("2", x), "scale: alpha must be a real number, got str"),
             (lambda: ops.scale(True, x), "got bool"),
             (lambda: ops.scale(2.0, x, out=dev.zeros(7, np.float32)), "shape"),
             (lambda: ops.scale(2.0, x, out=dev.zeros(8, np.float64)), "dtype")]
    for call, match in cases:
        with pytest.raises(isthmus.InvalidArgumentError, match=match):
            call()
    assert isthmus.live_buffers() <= before + 2  # only the wrong `out`s the cases made themselves
    with pytest.raises(isthmus.UnsupportedDtypeError, match="scale does not support int32"):
        ops.scale(2, dev.zeros(8, np.int32))


def test_scale_is_tuned_through_its_spec_alone(dev):
    """The tuner reads the op's spec from the registry: its space, sample inputs, call, reference."""
    result = isthmus.tune("scale", dev, problem={"n": 5003}, budget=3, dtype="float16", database=False)
    assert result.kernel == "scale" and result.space_size >= 1
    assert result.best["WG"] in (16, 64, 128, 256, 512, 1024)
    assert [e.status for e in result.evaluations].count("ok") == len(result.evaluations)  # each checked right


# Each layout forced (complete configs): an element per work-item; a chunk per work-item in 16-wide
# vectors (CPUs), with one group, a few, and more items than 64-element steps at the short lengths.
LAYOUTS = [{"WG": 64, "LAYOUT": 0, "GROUPS": 16}, {"WG": 16, "LAYOUT": 1, "GROUPS": 16},
           {"WG": 16, "LAYOUT": 1, "GROUPS": 1}, {"WG": 64, "LAYOUT": 1, "GROUPS": 128}]


def _forced(dev, params, alpha, x, out):
    from isthmus.ops.resolve import forced
    from isthmus.ops.specs.scale import SPEC

    if params["LAYOUT"] == 1 and dev.backend == "cuda":
        pytest.skip("LAYOUT 1 is OpenCL C vectors: CPU devices' layout (the spec's restriction)")
    with forced(SPEC, params):
        return ops.scale(alpha, x, out=out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("params", LAYOUTS, ids=lambda p: f"L{p['LAYOUT']}-WG{p['WG']}-G{p['GROUPS']}")
def test_every_layout_at_odd_sizes_and_in_place(dev, rng, dtype, params):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    for n in (1, 15, 17, 63, 65, 1031, 65537):  # around a vector and a step of four, primes
        x = rng.standard_normal(n).astype(lookup(dtype).np) * 3
        out = dev.asarray(np.full(n, np.nan, np.float32).astype(x.dtype))  # poisoned
        assert _forced(dev, params, -1.75, dev.asarray(x), out) is out
        np.testing.assert_array_equal(out.to_numpy(), reference(np, -1.75, x), err_msg=f"{params} n={n}")
        b = dev.asarray(x)
        assert _forced(dev, params, 0.3, b, b) is b  # in place
        np.testing.assert_array_equal(b.to_numpy(), reference(np, 0.3, x), err_msg=f"in place {params} n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_layout_rounds_and_keeps_nan_and_infinities(dev, rng, dtype):
    """16-bit results rounded once, to nearest even (bfloat16's vector rounding is its own code), and
    NaN, infinities, overflow and signed zeros as NumPy gives them, in the vector body and the tail."""
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    n = 1000
    x = (rng.standard_normal(n) * 1e3).astype(np.float32)
    x[[3, 500, n - 1]] = np.nan
    x[[4, 501]] = np.inf, -np.inf
    x[[5, 502]] = 0.0, -0.0
    x = x.astype(lookup(dtype).np)
    for alpha in (1.0009765625, -3.0e38 if dtype in ("float32", "float64", "bfloat16") else -6.0e4):
        out = dev.asarray(np.zeros(n, x.dtype))
        with np.errstate(over="ignore", invalid="ignore"):
            want = reference(np, alpha, x)
        got = _forced(dev, LAYOUTS[1], alpha, dev.asarray(x), out).to_numpy()
        if got.dtype.itemsize == 2:  # compared as float32 (exact): not every NumPy matches bfloat16 NaNs
            got, want = got.astype(np.float32), want.astype(np.float32)
        np.testing.assert_array_equal(got, want, err_msg=f"alpha {alpha}")  # NaN where NumPy has NaN
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"alpha {alpha}: signed zeros")


class _Device:
    """A stand-in with the limits the restrictions read (Device declares them)."""

    local_mem_optin = None
    wgmma = False

    def __init__(self, kind):
        self.kind, self.max_work_group_size, self.local_mem_size = kind, 1024, 49152


def test_vector_layout_is_for_cpus_only():
    from isthmus.ops.specs.scale import SPEC

    cpu, gpu, dt = _Device("cpu"), _Device("gpu"), lookup("float32")
    assert SPEC.defaults(cpu)["LAYOUT"] == 1 and SPEC.defaults(gpu)["LAYOUT"] == 0
    assert SPEC.is_valid({"WG": 16, "LAYOUT": 1, "GROUPS": 16}, cpu, {"n": 1 << 20}, dt)
    assert not SPEC.is_valid({"WG": 16, "LAYOUT": 1, "GROUPS": 16}, gpu, {"n": 1 << 20}, dt)
    assert not SPEC.is_valid({"WG": 16, "LAYOUT": 0, "GROUPS": 16}, cpu, {"n": 1 << 20}, dt)  # 16-item groups
    assert all(p["LAYOUT"] == 0 and p["WG"] >= 64 for p in SPEC.space(gpu, {"n": 1 << 20}, dt))
