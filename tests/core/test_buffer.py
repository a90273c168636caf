import gc

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import BUFFER_DTYPES


def _data(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 100, shape).astype(dtype)


@pytest.mark.parametrize("dtype", BUFFER_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (2, 3, 4), (0,), (4, 0)])
def test_round_trip(dev, rng, dtype, shape):
    if not dev.supports(dtype):
        with pytest.raises(isthmus.UnsupportedDtypeError):
            dev.empty(shape, dtype)
        return
    host = _data(rng, shape, dtype)
    buf = dev.asarray(host)
    assert buf.shape == shape and buf.dtype == np.dtype(dtype) and buf.nbytes == host.nbytes
    assert buf.device is dev
    np.testing.assert_array_equal(buf.to_numpy(), host)
    other = _data(rng, shape, dtype)
    buf.copy_from(other)
    np.testing.assert_array_equal(buf.to_numpy(), other)
    np.testing.assert_array_equal(dev.zeros(shape, dtype).to_numpy(), np.zeros(shape, dtype))
    copy = buf.to(dev)
    assert copy.ptr != buf.ptr or buf.nbytes == 0
    np.testing.assert_array_equal(copy.to_numpy(), other)


def test_non_contiguous_host_input_is_copied_in_order(dev, rng):
    host = rng.standard_normal((6, 8)).astype(np.float32)
    np.testing.assert_array_equal(dev.asarray(host.T).to_numpy(), host.T)


def test_copy_from_checks_dtype_and_shape(dev):
    buf = dev.empty((4, 4), np.float32)
    with pytest.raises(isthmus.InvalidArgumentError, match="dtype"):
        buf.copy_from(np.zeros((4, 4), np.float64))
    with pytest.raises(isthmus.InvalidArgumentError, match="elements"):
        buf.copy_from(np.zeros(15, np.float32))
    with pytest.raises(isthmus.InvalidArgumentError, match="dtype"):
        buf.to_numpy(out=np.empty(16, np.int32))


@pytest.mark.parametrize("shape", [(-1,), (2.5,), ("a",), None, (True,)])
def test_bad_shapes(dev, shape):
    with pytest.raises(isthmus.InvalidArgumentError):
        dev.empty(shape, np.float32)


@pytest.mark.parametrize("dtype", [np.complex64, np.bool_, np.int16, "float128x"])
def test_unsupported_dtype(dev, dtype):
    with pytest.raises(isthmus.UnsupportedDtypeError):
        dev.empty(3, dtype)
    with pytest.raises(isthmus.UnsupportedDtypeError):
        dev.asarray(np.zeros(3, dtype=np.complex64))


def test_closed_buffer_raises_everywhere(dev):
    buf = dev.asarray(np.arange(4, dtype=np.float32))
    with buf as b:
        assert b is buf
    assert buf.closed
    for use in (buf.to_numpy, lambda: buf.copy_from(np.zeros(4, np.float32)), lambda: buf.to(dev),
                lambda: buf.ptr, lambda: isthmus.ops.sum(buf), lambda: buf.reshape(2, 2)):
        with pytest.raises(isthmus.ClosedBufferError):
            use()
    buf.close()  # idempotent


def test_live_buffers_and_memory_return_to_start(dev):
    gc.collect()
    live, used = isthmus.live_buffers(), dev.memory_in_use()
    bufs = [dev.empty(1000, np.float32) for _ in range(50)]
    assert isthmus.live_buffers() == live + 50
    assert dev.memory_in_use() >= used + 50 * 4000 or dev.backend == "cuda"
    for b in bufs:
        b.close()
    del bufs
    for _ in range(1000):
        dev.empty(257, np.int32).close()
    gc.collect()
    assert isthmus.live_buffers() == live
    assert dev.memory_in_use() == used


def test_reshape_is_a_view(dev, rng):
    host = rng.standard_normal(12).astype(np.float32)
    buf = dev.asarray(host)
    view = buf.reshape(3, 4)
    assert view.ptr == buf.ptr and view.shape == (3, 4)
    np.testing.assert_array_equal(view.to_numpy(), host.reshape(3, 4))
    with pytest.raises(isthmus.InvalidArgumentError):
        buf.reshape(5, 3)


@pytest.mark.parametrize("shape", [(-1, 2), ((-1, 2),), (2, -1, 3), (-1,), (np.int64(-1), np.int32(4)), ([3, -1],)])
def test_reshape_infers_one_minus_one_as_numpy_does(dev, rng, shape):
    host = rng.standard_normal(12).astype(np.float32)
    buf = dev.asarray(host)
    want = host.reshape(*shape)
    view = buf.reshape(*shape)
    assert view.shape == want.shape and view.ptr == buf.ptr
    np.testing.assert_array_equal(view.to_numpy(), want)


@pytest.mark.parametrize("shape, match", [
    ((-1, -1), "only one dimension may be -1"), ((-1, 5), "12 is not a multiple of 5"),
    ((-1, "2"), "non-negative integers"), ((-1, 0), "could be any size")])
def test_reshape_refuses_what_numpy_refuses(dev, shape, match):
    buf = dev.zeros(12, np.float32)
    with pytest.raises((ValueError, TypeError)):  # NumPy refuses each too
        np.zeros(12).reshape(*shape)
    with pytest.raises(isthmus.InvalidArgumentError, match=match):
        buf.reshape(*shape)
    # (NumPy takes any negative number for the unknown dimension; isthmus only -1, as documented)
    with pytest.raises(isthmus.InvalidArgumentError, match="negative dimension"):
        buf.reshape(-2, 6)


def test_empty_host_is_usable_for_transfers(dev, rng):
    host = dev.empty_host((1000,), np.float32)
    assert isinstance(host, np.ndarray) and host.shape == (1000,) and host.dtype == np.float32
    host[:] = rng.standard_normal(1000)
    buf = dev.asarray(host)
    out = dev.empty_host((1000,), np.float32)
    buf.to_numpy(out=out)
    np.testing.assert_array_equal(out, host)


def test_opencl_buffers_refuse_cuda_exports(dev):
    buf = dev.zeros(3, np.float32)
    if dev.backend == "opencl":
        assert not hasattr(buf, "__cuda_array_interface__")
        with pytest.raises(BufferError):
            buf.__dlpack__()


def test_asarray_of_host_data_and_buffers(dev, rng):
    host = rng.standard_normal(9).astype(np.float32)
    buf = isthmus.asarray(host, device=dev)
    np.testing.assert_array_equal(buf.to_numpy(), host)
    assert isthmus.asarray(buf) is buf


class _CpuTensor:
    """A CPU DLPack producer with nothing else (no __array__, no buffer protocol), as a JAX or
    PyTorch CPU tensor looks to a consumer that only speaks DLPack."""

    def __init__(self, host):
        self._host = host

    def __dlpack__(self, **kw):
        return self._host.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._host.__dlpack_device__()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "float16"])
def test_asarray_of_a_cpu_dlpack_producer_copies_it_to_the_device(dev, rng, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    host = (rng.standard_normal((5, 7)) * 50).astype(dtype)
    producer = _CpuTensor(host)
    assert np.asarray(producer).dtype == object  # what asarray read before: "dtype object is not supported"
    buf = isthmus.asarray(producer, device=dev)
    assert buf.shape == (5, 7) and buf.dtype == host.dtype
    np.testing.assert_array_equal(buf.to_numpy(), host)
    strided = _CpuTensor(host.T)  # a strided view: copied contiguous
    np.testing.assert_array_equal(isthmus.asarray(strided, device=dev).to_numpy(), host.T)
    with pytest.raises(isthmus.UnsupportedDtypeError):
        isthmus.asarray(_CpuTensor(host.astype(np.complex64)), device=dev)


def test_asarray_of_a_producer_that_refuses_its_cuda_interface_is_a_typed_error():
    """A torch CUDA tensor that requires grad raises RuntimeError from __cuda_array_interface__:
    asarray says so as an InvalidArgumentError (with what to do), not the producer's RuntimeError."""
    class Refusing:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad.")

    with pytest.raises(isthmus.InvalidArgumentError, match="requires grad.*detach"):
        isthmus.asarray(Refusing())


def test_asarray_of_a_torch_cpu_tensor(dev, rng):
    torch = pytest.importorskip("torch")
    host = rng.standard_normal((3, 4)).astype(np.float32)
    buf = isthmus.asarray(torch.from_numpy(host), device=dev)
    np.testing.assert_array_equal(buf.to_numpy(), host)
    if dev.supports("bfloat16"):  # (NumPy's DLPack import has no bfloat16: read through its bits)
        t = torch.from_numpy(host).to(torch.bfloat16)
        buf = isthmus.asarray(t, device=dev)
        assert buf.dtype == isthmus.dtypes.lookup("bfloat16").np
        np.testing.assert_array_equal(buf.to_numpy().astype(np.float32), t.float().numpy())


def test_opencl_free_buffer_cache_keeps_the_newest_and_drops_the_oldest(dev, monkeypatch):
    """A freed OpenCL buffer is cached for the next allocation of its size; a full cache drops its
    oldest buffers to take the one just freed, and a buffer over the limit is not cached at all.
    Identity is the cl_mem handle (``ptr``): a cached buffer comes back as the same handle."""
    if dev.backend != "opencl":
        pytest.skip("the free-buffer cache is the OpenCL backend's (CUDA uses CuPy's pool)")
    mib = 1 << 20
    dev.free_pool()
    monkeypatch.setattr(dev.allocator, "_pool_limit", 3 * mib)
    in_use = dev.memory_in_use()
    a, b, c = dev.empty(mib, np.uint8), dev.empty(mib, np.uint8), dev.empty(2 * mib, np.uint8)
    pa, pb, pc = a.ptr, b.ptr, c.ptr
    for buf in (a, b, c):  # freed oldest first: a, then b, then c (which needs a's room)
        buf.close()
    del buf
    gc.collect()
    assert dev.allocator._pooled == 3 * mib
    got_c, got_b = dev.empty(2 * mib, np.uint8), dev.empty(mib, np.uint8)
    assert (got_c.ptr, got_b.ptr) == (pc, pb)  # the newest of each size came back
    fresh = dev.empty(mib, np.uint8)  # a was dropped: a new allocation (any handle but b's)
    assert fresh.ptr != pb and dev.allocator._pooled == 0
    big = dev.empty(4 * mib, np.uint8)
    big.close()
    assert dev.allocator._pooled == 0  # over the limit: back to the driver, not cached
    for buf in (got_c, got_b, fresh):
        buf.close()
    dev.free_pool()
    assert dev.allocator._pooled == 0 and not dev.allocator._pool
    assert dev.memory_in_use() == in_use


def test_opencl_cached_buffer_reuse_keeps_results_apart(dev, rng, monkeypatch):
    """Results handed out from the cache while earlier work on them may still be queued hold what
    their own call wrote (the queue is in order), through a cache that keeps evicting."""
    if dev.backend != "opencl":
        pytest.skip("the free-buffer cache is the OpenCL backend's")
    monkeypatch.setattr(dev.allocator, "_pool_limit", 3 * 257 * 129 * 4)
    host = [rng.standard_normal((129, 257)).astype(np.float32) for _ in range(3)]
    xs = [dev.asarray(h) for h in host]
    kept = []
    for i in range(30):
        t = isthmus.ops.transpose(xs[i % 3])  # freed at once: the next call reuses its memory
        if i % 7 == 0:
            kept.append((i % 3, t))
        else:
            t.close()
    for j, t in kept:
        np.testing.assert_array_equal(t.to_numpy(), host[j].T)


def test_free_pool_keeps_live_buffers_and_later_allocations_work(dev, rng):
    """free_pool() hands cached free memory back on every backend: buffers still open keep their
    contents and their count in memory_in_use, and allocating afterwards works."""
    host = rng.standard_normal(1000).astype(np.float32)
    keep = dev.asarray(host)
    for _ in range(3):
        dev.empty((4096,), np.float32).close()  # freed: cached for reuse
    in_use = dev.memory_in_use()
    if dev.backend == "opencl":
        assert dev.allocator._pooled > 0
    dev.free_pool()
    assert dev.memory_in_use() == in_use
    if dev.backend == "opencl":
        assert dev.allocator._pooled == 0 and not dev.allocator._pool
    np.testing.assert_array_equal(keep.to_numpy(), host)
    again = dev.asarray(host[::-1].copy())
    np.testing.assert_array_equal(again.to_numpy(), host[::-1])


def test_numpy_conversion_is_never_implicit(dev, rng):
    """np.asarray(buf) would otherwise be a 0-d object array holding the Buffer; it must say how
    to get a host copy instead (as CuPy does)."""
    host = rng.standard_normal(7).astype(np.float32)
    x = dev.asarray(host)
    for convert in (np.asarray, np.array, lambda b: np.add(b, 1)):
        with pytest.raises(TypeError, match=r"to_numpy\(\)"):
            convert(x)
    np.testing.assert_array_equal(x.to_numpy(), host)
