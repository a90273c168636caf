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
    np.testing.assert_array_equal(out.to_numpy(), reference(alpha, x))  # one rounding: exact
    np.testing.assert_array_equal(ops.scale(alpha, dev.asarray(x)).to_numpy(), reference(alpha, x))


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
             (lambda: ops.scale("2", x), "scale: parameter 'alpha'"),
             (lambda: ops.scale(True, x), "got a bool"),
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
    assert result.best["WG"] in (64, 128, 256, 512, 1024)
    assert [e.status for e in result.evaluations].count("ok") == len(result.evaluations)  # each checked right
