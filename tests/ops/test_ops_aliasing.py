"""An op's output that shares memory with one of its inputs (issue 26, item 5): the output given as
the input itself, as a reshaped view of it (another Buffer over the same memory) and, where a device
can make one (CUDA: a foreign array at an offset into another), overlapping part of it. Ops that
read an input while they write the output refuse (InvalidArgumentError naming both); ops defined in
place (scale, softmax: out may be x itself; sum and max: the result is written after all of x is
read) give NumPy's result, and refuse a partial overlap where it would give garbage."""
import ml_dtypes
import numpy as np
import pytest

import isthmus

BF16 = np.dtype(ml_dtypes.bfloat16)


def _view(buf, shape=None):
    """Another Buffer over ``buf``'s memory (not ``buf`` itself): a reshape through a flat view."""
    view = buf.reshape(buf.size).reshape(shape or buf.shape)
    assert view is not buf and view.ptr == buf.ptr
    return view


def _put(dev, rng, shape, dtype=np.float32):
    return dev.asarray(rng.standard_normal(shape).astype(dtype))


# ---- refused: the output is (a view of) an input the op reads while it writes -------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])  # gemm; gemm_mma (16-bit floats)
def test_gemm_refuses_c_over_an_input(dev, rng, dtype):
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    n = 24  # square: c has the shape of a and of b
    a, b = _put(dev, rng, (n, n), dt), _put(dev, rng, (n, n), dt)
    ha, hb = a.to_numpy(), b.to_numpy()
    cases = [("a", dict(c=a)), ("b", dict(c=b)), ("a", dict(c=_view(a))), ("b", dict(c=_view(b), beta=0.5)),
             ("a", dict(c=a, trans_b=True)), ("b", dict(c=_view(b), trans_a=True, alpha=2.0))]
    for name, kw in cases:
        with pytest.raises(isthmus.InvalidArgumentError, match=f"gemm: c shares memory with {name}"):
            isthmus.ops.gemm(a, b, **kw)
    np.testing.assert_array_equal(a.to_numpy(), ha)  # refused before anything ran
    np.testing.assert_array_equal(b.to_numpy(), hb)
    # the same call into a c of its own is NumPy's
    c = dev.asarray(np.full((n, n), np.nan, dt))
    assert isthmus.ops.gemm(a, b, c=c, trans_b=True) is c
    want = ha.astype(np.float64) @ hb.astype(np.float64).T
    np.testing.assert_allclose(c.to_numpy().astype(np.float64), want, rtol=2e-2, atol=5e-2)


def test_gemm_refuses_a_batched_c_over_an_input(dev, rng):
    a3, w = _put(dev, rng, (3, 5, 5)), _put(dev, rng, (5, 5))
    for c in (a3, _view(a3)):
        with pytest.raises(isthmus.InvalidArgumentError, match="gemm: c shares memory with a"):
            isthmus.ops.gemm(a3, w, c=c)
    w3 = _put(dev, rng, (3, 5, 5))
    with pytest.raises(isthmus.InvalidArgumentError, match="gemm: c shares memory with b"):
        isthmus.ops.gemm(w, w3, c=_view(w3))


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_axpy_refuses_y_over_x(dev, rng, dtype):
    host = rng.integers(0, 100, 1031).astype(dtype)
    x = dev.asarray(host)
    for y in (x, _view(x), _view(x, (1, 1031))):
        with pytest.raises(isthmus.InvalidArgumentError, match="axpy: y shares memory with x"):
            isthmus.ops.axpy(2, x, y)
    np.testing.assert_array_equal(x.to_numpy(), host)


@pytest.mark.parametrize("shape", [(16, 16), (6, 10), (1, 9)])
def test_transpose_refuses_out_over_x(dev, rng, shape):
    x = _put(dev, rng, shape)
    outs = [_view(x, shape[::-1])] + ([x] if shape[0] == shape[1] else [])
    for out in outs:
        with pytest.raises(isthmus.InvalidArgumentError, match="transpose: out shares memory with x"):
            isthmus.ops.transpose(x, out=out)


# ---- in place where the op defines it: NumPy's result --------------------------------------------
def test_scale_and_softmax_run_in_place_through_a_view(dev, rng):
    host = rng.standard_normal((13, 257)).astype(np.float32)
    x = dev.asarray(host)
    assert isthmus.ops.scale(0.5, x, out=_view(x)) is not None
    np.testing.assert_array_equal(x.to_numpy(), np.float32(0.5) * host)
    x = dev.asarray(host)
    isthmus.ops.softmax(x, out=_view(x))
    e = np.exp(host.astype(np.float64) - host.max(axis=1, keepdims=True))
    np.testing.assert_allclose(x.to_numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reductions_write_their_result_over_x(dev, rng, op):
    """The first launch reads all of x before the second writes out: out may be x's memory."""
    host = rng.standard_normal(1).astype(np.float32)
    x = dev.asarray(host)
    assert getattr(isthmus.ops, op)(x, out=x) is x
    np.testing.assert_array_equal(x.to_numpy(), host)
    x = dev.asarray(host.reshape(1, 1))
    out = x.reshape(1)
    assert getattr(isthmus.ops, op)(x, out=out) is out
    np.testing.assert_array_equal(out.to_numpy(), host)


# ---- partial overlaps (device pointers at an offset: CUDA) ---------------------------------------
def _offset_views(dev, n: int, shift: int, dtype=np.float32):
    """Two Buffers of n elements over one allocation, ``shift`` elements apart (CuPy slices)."""
    if dev.backend != "cuda":
        pytest.skip("a partial overlap needs device pointers at an offset; an OpenCL Buffer is a whole "
                    "allocation (cl_mem) or a reshape of one, so only whole overlaps exist there")
    cupy = pytest.importorskip("cupy")
    with cupy.cuda.Device(dev.index):
        base = cupy.asarray(np.random.default_rng().standard_normal(n + shift).astype(dtype))
    return isthmus.asarray(base[:n]), isthmus.asarray(base[shift:shift + n]), base


def test_partial_overlaps_are_refused_on_cuda(dev):
    x, y, base = _offset_views(dev, 1024, 3)
    cases = [
        (lambda: isthmus.ops.axpy(2.0, x, y), "axpy: y shares memory with x"),
        (lambda: isthmus.ops.scale(2.0, x, out=y), "scale: out shares memory with x"),
        (lambda: isthmus.ops.softmax(x.reshape(32, 32), out=y.reshape(32, 32)), "softmax: out shares memory with x"),
        (lambda: isthmus.ops.transpose(x.reshape(32, 32), out=y.reshape(32, 32)), "transpose: out shares memory"),
        (lambda: isthmus.ops.gemm(x.reshape(32, 32), x.reshape(32, 32), c=y.reshape(32, 32)),
         "gemm: c shares memory with a"),
    ]
    for call, match in cases:
        with pytest.raises(isthmus.InvalidArgumentError, match=match):
            call()
    h, hy, base16 = _offset_views(dev, 1024, 5, np.float16)  # gemm_mma
    with pytest.raises(isthmus.InvalidArgumentError, match="gemm: c shares memory with b"):
        isthmus.ops.gemm(hy.copy().reshape(32, 32), h.reshape(32, 32), c=hy.reshape(32, 32))


def test_sum_into_part_of_x_on_cuda(dev):
    x, _, base = _offset_views(dev, 4099, 0)
    out = isthmus.asarray(base[17:18])
    want = base.get().astype(np.float64).sum()
    assert isthmus.ops.sum(x, out=out) is out
    assert abs(float(out.to_numpy()[0]) - want) <= 1e-5 * np.abs(base.get()).sum()
