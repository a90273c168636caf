"""Bad input to the device API gets a typed IsthmusError on every device (issue 15, item 9)."""
import numpy as np
import pytest

import isthmus


@pytest.mark.parametrize("shape", [(2 ** 40,), (2 ** 62,), (2 ** 40, 2 ** 40), (2 ** 31, 2 ** 31, 16)])
def test_impossible_host_allocation_is_out_of_memory(dev, shape):
    with pytest.raises(isthmus.OutOfMemoryError, match="could not be allocated"):
        dev.empty_host(shape, np.float32)
    small = dev.empty_host((7,), np.float32)  # the device still works
    small[:] = 3
    assert small.sum() == 21


@pytest.mark.parametrize("bad", [[[1, 2], [3]], [1, [2, 3]], [[1.0], 2.0, [3.0, 4.0]]])
def test_ragged_list_to_asarray_is_invalid_argument(dev, bad):
    with pytest.raises(isthmus.InvalidArgumentError, match="rectangular"):
        dev.asarray(bad)


@pytest.mark.parametrize("where", ["comment", "body", "name"])
def test_source_with_a_lone_surrogate_is_invalid_argument(dev, where):
    source = {"comment": "__kernel void f(__global float* x) { x[0] = 1.0f; } // \ud800",
              "body": "__kernel void f(__global float* x) {\n x[0] = 1.0f; \udfff }",
              "name": "__kernel void f\ud800(__global float* x) { x[0] = 1.0f; }"}[where]
    with pytest.raises(isthmus.InvalidArgumentError, match="surrogate") as info:
        dev.compile(source, "f")
    str(info.value).encode("utf-8")


# ---- the library ops' scalar and flag arguments (issue 26, item 8) ------------------------------
BAD_NUMBERS = [None, "x", "2.0", True, 1j, [2.0], np.ones(2), np.array(2.0)]


def _ops_args(dev):
    x = dev.asarray(np.arange(6, dtype=np.float32))
    y = dev.asarray(np.ones(6, np.float32))
    a = dev.asarray(np.ones((3, 4), np.float32))
    w = dev.asarray(np.ones((5, 4), np.float32))
    return x, y, a, w


@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float16"])  # gemm's kernels; 16-bit floats: gemm_mma's
def test_op_scalars_that_are_not_numbers_are_invalid_arguments(dev, bad, dtype):
    x, y, a, w = _ops_args(dev)
    a16, w16 = dev.asarray(np.ones((3, 4), dtype)), dev.asarray(np.ones((5, 4), dtype))
    c16 = dev.asarray(np.ones((3, 5), dtype))
    calls = [
        ("axpy: a must be", lambda: isthmus.ops.axpy(bad, x, y)),
        ("scale: alpha must be", lambda: isthmus.ops.scale(bad, x)),
        ("scale: alpha must be", lambda: isthmus.ops.scale(bad, x, out=x)),
        ("axpy: a must be", lambda: isthmus.ops.axpy(bad, dev.empty(0, np.float32), dev.empty(0, np.float32))),
        ("scale: alpha must be", lambda: isthmus.ops.scale(bad, dev.empty((0, 3), np.float32))),
        ("gemm: alpha must be", lambda: isthmus.ops.gemm(a16, w16, alpha=bad, trans_b=True)),
        ("gemm: beta must be", lambda: isthmus.ops.gemm(a16, w16, c16, beta=bad, trans_b=True)),
        ("gemm: beta must be", lambda: isthmus.ops.gemm(a16, w16, beta=bad, trans_b=True)),
    ]
    for match, call in calls:
        with pytest.raises(isthmus.InvalidArgumentError, match=match) as info:
            call()
        assert "clSetKernelArg" not in str(info.value) and "gemm_cpu" not in str(info.value)
    np.testing.assert_array_equal(y.to_numpy(), np.ones(6, np.float32))  # nothing ran


def test_op_scalars_out_of_the_kernels_range_are_named(dev):
    x, y, a, w = _ops_args(dev)
    i = dev.asarray(np.arange(6, dtype=np.int32))
    for match, call in [(r"gemm: alpha = 1e\+300 does not fit", lambda: isthmus.ops.gemm(a, w, alpha=1e300, trans_b=True)),
                        ("axpy: a = 2.5 does not fit the kernel's int .not a whole number",
                         lambda: isthmus.ops.axpy(2.5, i, i.copy())),
                        ("axpy: a = 4294967296 does not fit", lambda: isthmus.ops.axpy(2 ** 32, i, i.copy())),
                        (r"scale: alpha = 1e\+39 does not fit", lambda: isthmus.ops.scale(1e39, x))]:
        with pytest.raises(isthmus.InvalidArgumentError, match=match):
            call()
    # numbers of any kind NumPy has are taken: the result is NumPy's
    out = isthmus.ops.gemm(a, w, alpha=np.float64(0.5), trans_b=True)
    np.testing.assert_array_equal(out.to_numpy(), np.full((3, 5), 2.0, np.float32))
    isthmus.ops.axpy(np.int8(3), i, j := dev.asarray(np.ones(6, np.int32)))
    np.testing.assert_array_equal(j.to_numpy(), 3 * np.arange(6) + 1)


@pytest.mark.parametrize("bad", ["yes", "", 1, 0, None, 1.0, np.int64(1), [True]], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gemm_transposes_must_be_bools(dev, bad, dtype):
    a, w = dev.asarray(np.ones((3, 4), dtype)), dev.asarray(np.ones((5, 4), dtype))
    for kw in ({"trans_b": bad}, {"trans_a": bad}):
        name = next(iter(kw))
        with pytest.raises(isthmus.InvalidArgumentError, match=f"gemm: {name} must be True or False"):
            isthmus.ops.gemm(a, w, **kw)
    # NumPy's bool is a bool
    got = isthmus.ops.gemm(a, w, trans_b=np.bool_(True), trans_a=np.False_)
    np.testing.assert_array_equal(got.to_numpy().astype(np.float32), np.full((3, 5), 4, np.float32))
