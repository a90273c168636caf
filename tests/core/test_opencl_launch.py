"""OpenCL launches: the event-less enqueue (ctypes, the ICD loader PyOpenCL loaded) and PyOpenCL's
enqueue give the same results and the same typed errors; the kernel object's argument memo keeps no
memory alive and never lets one call's arguments reach another's launch."""
import gc
import threading

import numpy as np
import pytest

import isthmus
from isthmus.backends.opencl.launch import _NativeEnqueue

_BODY = """void fill(__global float* y, const float v, const int n) {
    const int i = (int)get_global_id(0);
    if (i < n) y[i] = v + (float)i;
}
"""
_REQD = "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n" + _BODY
_FILL = "__kernel " + _BODY


@pytest.fixture(params=["native", "pyopencl"])
def ocl(request, dev):
    """``dev`` (OpenCL only) launching through one enqueue path: the event-less one, or PyOpenCL's
    (where no ICD loader is found)."""
    if dev.backend != "opencl":
        pytest.skip("OpenCL's enqueue paths")
    launcher = dev.launcher
    chosen = launcher.event_less
    if request.param == "native" and launcher.native_enqueue is None:
        pytest.skip(f"no OpenCL ICD loader found for the event-less enqueue on {dev.id}")
    launcher.event_less = request.param == "native"
    try:
        yield dev
    finally:
        launcher.event_less = chosen


def test_the_event_less_enqueue_is_found_on_linux(dev):
    if dev.backend != "opencl":
        pytest.skip("OpenCL only")
    assert isinstance(dev.launcher.native_enqueue, _NativeEnqueue)


def test_a_launch_the_driver_refuses_is_a_launch_config_error_and_the_next_launch_runs(ocl, rng):
    k = ocl.compile(_REQD, "fill")
    n = 200
    y = ocl.asarray(np.full(n, np.nan, np.float32))
    with pytest.raises(isthmus.LaunchConfigError, match="INVALID_WORK_GROUP_SIZE|WORK_GROUP_SIZE"):
        k(y, 2.0, n, config=isthmus.LaunchConfig((256,), (32,)))
    k(y, 2.0, n, config=isthmus.LaunchConfig((256,), (64,)))
    np.testing.assert_array_equal(y.to_numpy(), 2.0 + np.arange(n, dtype=np.float32))


def test_both_enqueue_paths_compute_ops_kernels_and_plans(ocl, rng):
    m, k, n = 37, 29, 43
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = ocl.asarray(np.full((m, n), np.nan, np.float32))
    isthmus.ops.gemm(ocl.asarray(a), ocl.asarray(b), c)
    np.testing.assert_allclose(c.to_numpy(), a @ b, rtol=1e-4, atol=1e-4)
    x = rng.standard_normal((5, 77)).astype(np.float32)
    got = isthmus.ops.softmax(ocl.asarray(x)).to_numpy()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    kern = ocl.compile(_REQD, "fill")
    y = ocl.asarray(np.full(70, np.nan, np.float32))
    plan = kern.prepare(y, -1.0, 70, config=isthmus.LaunchConfig((128,), (64,)))
    plan.launch()
    np.testing.assert_array_equal(y.to_numpy(), -1.0 + np.arange(70, dtype=np.float32))
    plan.bind("v", 4.0)
    plan.launch()
    np.testing.assert_array_equal(y.to_numpy(), 4.0 + np.arange(70, dtype=np.float32))


def test_enqueue_statuses_become_typed_errors_that_name_the_status(dev):
    if dev.backend != "opencl":
        pytest.skip("OpenCL's status codes")
    k = dev.compile(_REQD, "fill")
    for status, error, name in ((-4, isthmus.OutOfMemoryError, "MEM_OBJECT_ALLOCATION_FAILURE"),
                                (-5, isthmus.DeviceError, "OUT_OF_RESOURCES"),
                                (-54, isthmus.LaunchConfigError, "INVALID_WORK_GROUP_SIZE"),
                                (-63, isthmus.LaunchConfigError, "INVALID_GLOBAL_WORK_SIZE"),
                                (-36, isthmus.DeviceError, "INVALID_COMMAND_QUEUE"),
                                (-9999, isthmus.DeviceError, "status")):
        exc = dev.launcher.status_error(k, (256,), (64,), status)
        assert type(exc) is error
        assert f"{name} ({status})" in str(exc) and "'fill'" in str(exc) and dev.id in str(exc)
    # PyOpenCL's errors go the same way by the status they carry; one raised with a message only has none
    exc = dev.launcher.launch_error(k, (256,), (64,), dev._cl.LogicError("no record"))
    assert type(exc) is isthmus.DeviceError and "no record" in str(exc)


def test_the_argument_memo_keeps_no_memory_alive(dev):
    """A launch remembers the memory it set as a weak reference: once the buffer is closed and
    dropped, its memory is no one's (it goes back to the pool, not kept by the kernel)."""
    if dev.backend != "opencl":
        pytest.skip("OpenCL's kernel objects hold their arguments")
    k = dev.compile(_REQD, "fill")
    y = dev.asarray(np.zeros(64, np.float32))
    k(y, 1.0, 64, config=isthmus.LaunchConfig((64,), (64,)))
    dev.synchronize()
    ref = y._mem.ref
    assert k._backend.memo[0] is ref
    y.close()
    del y
    gc.collect()
    assert ref() is None


def test_threads_launching_one_kernel_each_get_their_own_arguments(dev):
    """Several threads launch the same kernel object with their own output and scalar, 300 times
    each, through a barrier so they start together: every output holds its own thread's last value
    and nothing else (an argument set by one thread never reaches another's enqueue)."""
    k = dev.compile(_FILL, "fill")
    n, threads, rounds = 100, 4, 300
    outs = [dev.asarray(np.full(n, np.nan, np.float32)) for _ in range(threads)]
    barrier = threading.Barrier(threads)
    errors = []

    def work(t):
        try:
            barrier.wait()
            for r in range(rounds):
                k(outs[t], float(t * 1000 + r), n, config=isthmus.LaunchConfig((128,), (64,)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors
    for t, y in enumerate(outs):
        np.testing.assert_array_equal(y.to_numpy(), t * 1000 + rounds - 1 + np.arange(n, dtype=np.float32))


def test_gemm_alpha_and_beta_alternating_on_the_same_buffers(dev, rng):
    """gemm's steps hold alpha = 1 and beta = 0 packed: calls that pass others, then the defaults
    again (as int, float or NumPy numbers), on the same buffers, each compute their own result."""
    m, k, n = 19, 23, 17
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    da, db = dev.asarray(a), dev.asarray(b)
    c = dev.empty((m, n), np.float32)
    for alpha, beta in ((1.0, 0.0), (2.5, 0.0), (1, 0), (1.0, 0.5), (np.float32(1.0), 0), (-1.0, np.float64(0.25)),
                        (1.0, 0.0)):
        c.copy_from(c0)
        isthmus.ops.gemm(da, db, c, alpha=alpha, beta=beta)
        np.testing.assert_allclose(c.to_numpy(), float(alpha) * (a @ b) + float(beta) * c0, rtol=1e-4, atol=1e-4)
    with pytest.raises(isthmus.InvalidArgumentError, match="bool"):
        isthmus.ops.gemm(da, db, c, alpha=True)


def test_the_enqueue_is_chosen_by_platform_pyopencl_s_on_pocl(dev):
    """PoCL: PyOpenCL's enqueue (the event-less ctypes call costs it about twice as much); other
    platforms (NVIDIA's OpenCL measured): the event-less one. Prepared launches follow the choice."""
    from isthmus.backends.opencl.launch import _event_less_pays

    assert not _event_less_pays("Portable Computing Language")
    assert _event_less_pays("NVIDIA CUDA") and _event_less_pays("Intel(R) OpenCL Graphics")
    if dev.backend != "opencl":
        pytest.skip("OpenCL's enqueue")
    pocl = "portable computing language" in dev.platform.lower()
    assert dev.launcher.event_less is (not pocl)
    k = dev.compile(_FILL, "fill")
    y = dev.zeros(64, np.float32)
    plan = k.prepare(y, 1.0, 64, config=isthmus.LaunchConfig((64,)))
    assert (plan._native._enqueue is None) is (pocl or dev.launcher.native_enqueue is None)
    plan.launch()
    np.testing.assert_array_equal(y.to_numpy(), 1.0 + np.arange(64, dtype=np.float32))


def test_none_for_a_scalar_parameter_is_a_typed_error_not_the_drivers(ocl):
    """None stands for a zero-size buffer at a memory parameter only; at a scalar parameter
    Device.launch refuses it (it reached clSetKernelArg: INVALID_ARG_SIZE, a DeviceError)."""
    k = ocl.compile(_FILL, "fill")
    y = ocl.zeros(8, np.float32)
    with pytest.raises(isthmus.InvalidArgumentError, match="parameter 'v' is float, got NoneType"):
        ocl.launch(k, (8,), None, [y, None, 8])
    ocl.launch(k, (8,), None, [y, 1.0, 8])  # the next launch runs
    assert np.array_equal(y.to_numpy(), 1.0 + np.arange(8, dtype=np.float32))
