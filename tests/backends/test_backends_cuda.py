"""CUDA-only behaviour: zero-copy interop with CuPy/PyTorch/DLPack, pinned host memory, peer copies."""
import numpy as np
import pytest

import isthmus

pytestmark = pytest.mark.gpu


def _cuda():
    try:
        return isthmus.device("cuda:0")
    except isthmus.IsthmusError:
        pytest.skip("no CUDA device")


def test_cupy_array_is_wrapped_without_copy_and_kept_alive():
    dev = _cuda()
    import cupy

    arr = cupy.arange(1000, dtype=cupy.float32)
    buf = isthmus.asarray(arr)
    assert buf.ptr == arr.data.ptr and buf.device is dev and buf.shape == (1000,)
    y = dev.zeros(1000, np.float32)
    isthmus.ops.axpy(2.0, buf, y)
    np.testing.assert_array_equal(y.to_numpy(), 2 * np.arange(1000, dtype=np.float32))
    ptr = arr.data.ptr
    del arr  # the buffer keeps the CuPy allocation alive
    assert buf.ptr == ptr
    np.testing.assert_array_equal(buf.to_numpy(), np.arange(1000, dtype=np.float32))


def test_export_through_cuda_array_interface_and_dlpack():
    dev = _cuda()
    import cupy

    host = np.random.default_rng().standard_normal((17, 33)).astype(np.float32)
    buf = dev.asarray(host)
    view = cupy.asarray(buf)
    assert view.data.ptr == buf.ptr
    dev.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(view), host)
    dl = cupy.from_dlpack(buf)
    assert dl.data.ptr == buf.ptr
    view[0, 0] = 42.0  # writes through the shared memory
    cupy.cuda.Device(0).synchronize()
    assert buf.to_numpy()[0, 0] == 42.0
    assert buf.__dlpack_device__() == (2, 0)


def test_torch_tensor_round_trip():
    dev = _cuda()
    torch = pytest.importorskip("torch")
    t = torch.rand(4097, device="cuda")
    buf = isthmus.asarray(t)
    assert buf.ptr == t.data_ptr() and buf.dtype == np.float32 and buf.device is dev
    torch.cuda.synchronize()
    s = isthmus.ops.sum(buf).to_numpy()[0]
    assert abs(s - float(t.double().sum())) < 1e-3 * 4097
    back = torch.from_dlpack(buf)
    assert back.data_ptr() == buf.ptr


def test_a_torch_bfloat16_tensor_is_wrapped_as_bfloat16():
    """torch's CUDA array interface says "<V2" for bfloat16 (torch before 2.6: "<f2", float16's):
    the Buffer must be bfloat16 over the same memory, neither refused nor read as float16."""
    dev = _cuda()
    torch = pytest.importorskip("torch")
    t = torch.randn(257, 3, device="cuda", dtype=torch.bfloat16) * 100
    buf = isthmus.asarray(t)
    assert buf.ptr == t.data_ptr() and buf.device is dev and buf.shape == (257, 3)
    assert buf.dtype == isthmus.dtypes.lookup("bfloat16").np
    torch.cuda.synchronize()
    want = t.float().cpu().numpy()
    np.testing.assert_array_equal(buf.to_numpy().astype(np.float32), want)
    s = float(isthmus.ops.sum(buf).to_numpy().astype(np.float64).reshape(-1)[0])
    assert abs(s - float(want.astype(np.float64).sum())) <= 1e-2 * np.abs(want).sum()


def test_non_contiguous_foreign_array_is_refused():
    _cuda()
    import cupy

    with pytest.raises(isthmus.InvalidArgumentError, match="contiguous"):
        isthmus.asarray(cupy.zeros((8, 8), cupy.float32)[:, ::2])


def test_pinned_host_memory():
    dev = _cuda()
    import cupy

    host = dev.empty_host((1 << 20,), np.float32)
    ptr_attrs = cupy.cuda.runtime.pointerGetAttributes(host.ctypes.data)
    assert ptr_attrs.type == cupy.cuda.runtime.memoryTypeHost  # page-locked, not pageable
    host[:] = 1.5
    np.testing.assert_array_equal(dev.asarray(host).to_numpy(), host)


def test_same_source_on_cuda_and_opencl_gpu():
    gpus = [d for d in isthmus.devices() if d.kind == "gpu"]
    if len({d.backend for d in gpus}) < 2:
        pytest.skip("needs a CUDA and an OpenCL GPU device")
    src = "__kernel void sq(const int n, __global float* v) { int i = get_global_id(0); if (i < n) v[i] = v[i] * v[i]; }"
    host = np.random.default_rng().standard_normal(1001).astype(np.float32)
    for d in gpus:
        b = d.asarray(host)
        d.compile(src, "sq")(1001, b, config=isthmus.LaunchConfig((1024,), (128,)))
        np.testing.assert_allclose(b.to_numpy(), host * host, rtol=1e-6)


def test_two_gpus_peer_copy_and_concurrent_kernels():
    cudas = [d for d in isthmus.devices() if d.backend == "cuda"]
    if len(cudas) < 2:
        pytest.skip("needs two CUDA devices")
    d0, d1 = cudas[:2]
    rng = np.random.default_rng()
    host = rng.standard_normal(1 << 20).astype(np.float32)
    a = d0.asarray(host)
    b = a.to(d1)  # a peer copy where the GPUs allow it
    assert b.device is d1 and b.ptr != a.ptr
    np.testing.assert_array_equal(b.to_numpy(), host)
    ya, yb = d0.zeros(host.size, np.float32), d1.zeros(host.size, np.float32)
    isthmus.ops.axpy(1.0, a, ya)
    isthmus.ops.axpy(2.0, b, yb)  # queued on both GPUs at once
    np.testing.assert_array_equal(ya.to_numpy(), host)
    np.testing.assert_array_equal(yb.to_numpy(), 2 * host)
    with pytest.raises(isthmus.InvalidArgumentError):
        isthmus.ops.axpy(1.0, a, yb)
    np.testing.assert_array_equal(yb.to(d0).to_numpy(), 2 * host)


def test_allocations_under_a_users_stream_are_tied_to_the_device_stream():
    """A result allocated while the thread's current CuPy stream is a user's non-blocking stream
    is tied to isthmus' stream (so CuPy never hands the block to that stream's work early); on the
    legacy default stream it is tied to that one, which synchronizes with isthmus' stream."""
    dev = _cuda()
    import cupy

    rng = np.random.default_rng()
    host = rng.standard_normal((64, 257)).astype(np.float32)
    x = dev.asarray(host)
    ref = np.exp(host - host.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    user = cupy.cuda.Stream(non_blocking=True)
    for current in (user, cupy.cuda.Stream.null):
        with current:
            outs = [isthmus.ops.softmax(x) for _ in range(20)]
            for o in outs[:-1]:
                o.close()  # freed while later launches may still run: reuse must stay ordered
            scratch = [cupy.full(64 * 257, np.nan, cupy.float32) for _ in range(4)]  # CuPy work on `current`
            current.synchronize()
        np.testing.assert_allclose(outs[-1].to_numpy(), ref, rtol=1e-5, atol=1e-7)
        del scratch
