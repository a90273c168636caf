"""bfloat16 on every device: host round trips, the ops that take it (axpy, sum, max, transpose, softmax) against
NumPy (ml_dtypes) at odd sizes, dtype.h's conversions (round to nearest even, NaN, infinities), and
the typed error of an op that does not take it."""
import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.ops.registry import OPS

BF16 = np.dtype(ml_dtypes.bfloat16)


def _random(rng, shape):
    return (rng.standard_normal(shape) * 10).astype(BF16)


def test_every_device_has_bfloat16(dev):
    assert "bfloat16" in dev.dtypes and dev.supports(BF16) and dev.supports("bfloat16")


@pytest.mark.parametrize("n", [1, 7, 1009, 65537])
def test_round_trip_keeps_every_bit(dev, rng, n):
    bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)  # every pattern, NaNs included
    x = bits.view(BF16)
    buf = dev.asarray(x)
    assert buf.dtype == BF16 and buf.nbytes == 2 * n
    np.testing.assert_array_equal(buf.to_numpy().view(np.uint16), bits)
    np.testing.assert_array_equal(buf.copy().to_numpy().view(np.uint16), bits)


@pytest.mark.parametrize("n", [1, 2, 97, 1009, 65537])
def test_axpy_rounds_once_like_numpy(dev, rng, n):
    x, y = _random(rng, n), _random(rng, n)
    by = dev.asarray(y)
    isthmus.ops.axpy(-1.75, dev.asarray(x), by)
    want = OPS["axpy"].reference(np, -1.75, x, y)  # f32 arithmetic, one rounding to nearest even
    np.testing.assert_array_equal(by.to_numpy().view(np.uint16), want.view(np.uint16))


def test_stores_round_to_nearest_even_and_keep_specials(dev):
    # x + y is exact in f32 and lands on (or next to) the midpoint of two bfloat16 values
    x = np.array([1, 1 + 2 ** -7, 1, -1, -(1 + 2 ** -7), np.inf, 3e38, 1, np.nan], np.float32).astype(BF16)
    y = np.array([2 ** -8, 2 ** -8, 2 ** -8 + 2 ** -14, -(2 ** -8), -(2 ** -8), 1, 3e38, -np.inf, 1],
                 np.float32).astype(BF16)
    by = dev.asarray(y)
    isthmus.ops.axpy(1.0, dev.asarray(x), by)
    got = by.to_numpy()
    want = OPS["axpy"].reference(np, 1.0, x, y)  # ml_dtypes: ties to even, overflow to inf
    assert want[0] == 1 and want[1] == 1 + 2 ** -6 and want[2] == 1 + 2 ** -7  # the ties really are ties
    np.testing.assert_array_equal(got[:-1].view(np.uint16), want[:-1].view(np.uint16))
    assert np.isnan(got[-1].astype(np.float32))


@pytest.mark.parametrize("n", [1, 7, 257, 65537, 1 << 20 | 3])
def test_sum_accumulates_in_f32(dev, rng, n):
    x = _random(rng, n)
    got = float(isthmus.ops.sum(dev.asarray(x)).to_numpy()[0])
    x64 = x.astype(np.float64)
    # f32 partial sums, one rounding of the total to bfloat16 (relative 2^-8)
    assert abs(got - x64.sum()) <= abs(x64.sum()) * 2 ** -8 + np.abs(x64).sum() * 1e-6


@pytest.mark.parametrize("n", [1, 7, 257, 65537, 1 << 20 | 3])
def test_max_is_exact(dev, rng, n):
    x = _random(rng, n) - 50
    out = isthmus.ops.max(dev.asarray(x))
    assert out.dtype == BF16
    np.testing.assert_array_equal(out.to_numpy(), OPS["max"].reference(np, x))


@pytest.mark.parametrize("shape", [(1, 1), (37, 53), (64, 64), (129, 7)])
def test_transpose_moves_bits(dev, rng, shape):
    bits = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    out = isthmus.ops.transpose(dev.asarray(bits.view(BF16)))
    assert out.dtype == BF16 and out.shape == shape[::-1]
    np.testing.assert_array_equal(out.to_numpy().view(np.uint16), bits.T)


def test_an_op_without_bfloat16_says_so(dev):
    """A kernel family that does not list bfloat16 refuses it before compiling anything (every
    library op takes it now: a family of one's own, as a user defines one)."""
    from isthmus.dtypes import lookup
    from isthmus.ops.resolve import resolve
    from isthmus.ops.spec import OpSpec, Tunable

    mine = OpSpec(name="mine", source="no-such-file.cl", entries=("mine",), dtypes=("float32", "float16"),
                  tunables=(Tunable("WG", (64,), 64),), problem=("n",))
    with pytest.raises(isthmus.UnsupportedDtypeError, match="mine does not support bfloat16; it supports float32"):
        resolve(mine, dev, lookup("bfloat16"), {"n": 5})


@pytest.mark.parametrize("shape", [(1, 1), (7, 129), (3, 20011)])
def test_softmax_computes_in_f32_and_rounds_once(dev, rng, shape):
    x = _random(rng, shape)
    out = isthmus.ops.softmax(dev.asarray(x))
    assert out.dtype == BF16
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    # f32 arithmetic, one rounding to bfloat16 (relative 2^-8), plus f32 rounding of exp and sums
    np.testing.assert_allclose(out.to_numpy().astype(np.float64), want, rtol=2 ** -8 + 1e-5, atol=1e-38)
