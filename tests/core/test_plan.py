"""Prepared launches (isthmus.plan): packed once, launch only enqueues, bind re-checks."""
import numpy as np
import pytest

import isthmus

SRC = """
__kernel void saxpb(const long n, const float a, __global const float* x, const int b, __global float* y)
{
    const long i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + (float)b;
}
"""
POISON = np.float32(np.nan)


def _setup(dev, rng, n):
    k = dev.compile(SRC, "saxpb")
    xh = rng.standard_normal(n).astype(np.float32)
    x = dev.asarray(xh)
    y = dev.asarray(np.full(n, POISON, np.float32))
    return k, xh, x, y


def _cfg(n, wg=16):
    return isthmus.LaunchConfig((-(-n // wg) * wg,), (wg,))


@pytest.mark.parametrize("n", [1, 13, 1001])
def test_plan_matches_eager_and_numpy(dev, rng, n):
    k, xh, x, y = _setup(dev, rng, n)
    a = float(rng.uniform(-2, 2))
    plan = k.prepare(n, a, x, 3, y, config=_cfg(n))
    plan.launch()
    np.testing.assert_allclose(y.to_numpy(), np.float32(a) * xh + 3, rtol=1e-6, atol=1e-6)
    y.copy_from(np.full(n, POISON, np.float32))
    k(n, a, x, 3, y, config=_cfg(n))
    eager = y.to_numpy()
    y.copy_from(np.full(n, POISON, np.float32))
    for _ in range(3):  # repeated launches reuse the packed arguments
        plan.launch()
    np.testing.assert_array_equal(y.to_numpy(), eager)


def test_bind_scalars_and_buffers(dev, rng):
    n = 37
    k, xh, x, y = _setup(dev, rng, n)
    plan = k.prepare(n, 1.0, x, 0, y, config=_cfg(n))
    plan.bind("a", 2.5).bind(3, -4)  # by name and by index
    plan.launch()
    np.testing.assert_allclose(y.to_numpy(), np.float32(2.5) * xh - 4, rtol=1e-6, atol=1e-6)
    x2h = rng.standard_normal(n).astype(np.float32)
    y2 = dev.asarray(np.full(n, POISON, np.float32))
    plan.bind("x", dev.asarray(x2h)).bind(-1, y2)
    plan.launch()
    np.testing.assert_allclose(y2.to_numpy(), np.float32(2.5) * x2h - 4, rtol=1e-6, atol=1e-6)
    assert plan.value("b") == np.int32(-4) and plan.value("y") is y2


def test_bind_checks_like_a_launch(dev, rng):
    n = 8
    k, _, x, y = _setup(dev, rng, n)
    plan = k.prepare(n, 1.0, x, 0, y, config=_cfg(n))
    with pytest.raises(isthmus.InvalidArgumentError, match="float32"):
        plan.bind("x", dev.asarray(np.ones(n, np.int32)))
    with pytest.raises(isthmus.InvalidArgumentError, match="Buffer"):
        plan.bind("y", 1.0)
    with pytest.raises(isthmus.InvalidArgumentError, match="scalar"):
        plan.bind("a", x)
    with pytest.raises(isthmus.InvalidArgumentError, match="does not fit"):
        plan.bind("b", 2**40)
    with pytest.raises(isthmus.InvalidArgumentError, match="no parameter 'q'"):
        plan.bind("q", 1)
    with pytest.raises(isthmus.InvalidArgumentError, match="out of range"):
        plan.bind(5, 1)
    closed = dev.asarray(np.ones(n, np.float32))
    closed.close()
    with pytest.raises(isthmus.ClosedBufferError):
        plan.bind("x", closed)


def test_prepare_checks_arguments_and_config(dev, rng):
    k, _, x, y = _setup(dev, rng, 8)
    with pytest.raises(isthmus.LaunchConfigError, match="needs a launch config"):
        k.prepare(8, 1.0, x, 0, y)
    with pytest.raises(isthmus.LaunchConfigError, match="does not divide"):
        k.prepare(8, 1.0, x, 0, y, config=isthmus.LaunchConfig((10,), (4,)))
    with pytest.raises(isthmus.InvalidArgumentError, match="takes 5 arguments"):
        k.prepare(8, 1.0, x, y, config=_cfg(8))
    with pytest.raises(isthmus.InvalidArgumentError, match="float32"):
        k.prepare(8, 1.0, dev.zeros(8, np.int32), 0, y, config=_cfg(8))


def test_closed_buffer_is_an_error_not_a_crash(dev, rng):
    n = 64
    k, xh, x, y = _setup(dev, rng, n)
    plan = k.prepare(n, 2.0, x, 1, y, config=_cfg(n))
    x.close()
    with pytest.raises(isthmus.ClosedBufferError, match="bound to x"):
        plan.launch()
    plan.bind("x", dev.asarray(xh))
    plan.launch()
    np.testing.assert_allclose(y.to_numpy(), 2 * xh + 1, rtol=1e-6, atol=1e-6)
    plan.close()
    plan.close()
    with pytest.raises(isthmus.InvalidArgumentError, match="closed"):
        plan.launch()


def test_plan_keeps_memory_of_closed_buffers(dev, rng):
    n = 16
    k, _, x, y = _setup(dev, rng, n)
    plan = k.prepare(n, 2.0, x, 1, y, config=_cfg(n))
    mem = y._mem
    y.close()
    assert plan._mems[-1] is mem  # the allocation cannot be reused while the plan holds it


def test_library_kernels_prepare(dev, rng):
    n = 1001
    xh = rng.standard_normal(n).astype(np.float32)
    yh = rng.standard_normal(n).astype(np.float32)
    x, y = dev.asarray(xh), dev.asarray(yh)
    plan = dev.library("axpy").prepare(2.0, x, y)
    assert isinstance(plan, isthmus.plan.Plan) and plan.result is y
    plan.launch()
    plan.bind("a", -1.0).launch()
    np.testing.assert_allclose(y.to_numpy(), yh + xh, rtol=1e-5, atol=1e-6)
    total = dev.library("sum").prepare(x)  # two launches and a scratch buffer: a graph
    total.launch()
    np.testing.assert_allclose(total.result.to_numpy()[0], xh.sum(dtype=np.float64), rtol=1e-4, atol=1e-4)
    with pytest.raises(isthmus.InvalidArgumentError):
        dev.library("axpy").prepare(1.0, x, dev.zeros(3, np.float32))


def test_cuda_parameter_block_is_packed_once_and_rebound_in_place():
    """The CUDA prepared launch without a GPU: the driver call gets an array of pointers to the
    argument values (read back here through ctypes), and bind() rewrites a value in place."""
    import ctypes
    from types import SimpleNamespace

    from isthmus.backends import cuda

    calls = []

    def launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        p = (ctypes.c_void_p * 3).from_address(params)
        calls.append(((f, gx, gy, gz, bx, by, bz, shmem, stream, extra),
                      ctypes.c_int64.from_address(p[0]).value, ctypes.c_float.from_address(p[1]).value,
                      ctypes.c_uint64.from_address(p[2]).value))

    cp = SimpleNamespace(cuda=SimpleNamespace(driver=SimpleNamespace(launchKernel=launch_kernel,
                                                                     CUDADriverError=RuntimeError),
                                              runtime=SimpleNamespace(getDevice=lambda: 0)))
    dev = SimpleNamespace(_cp=cp, index=0, id="cuda:0", stream=SimpleNamespace(ptr=77), _launch_graphs=False)
    launcher = SimpleNamespace(device=dev, grid=lambda k, g, l: ((g[0] // l[0],), l))
    kernel = SimpleNamespace(native=SimpleNamespace(ptr=1234), name="k")
    prepared = cuda._PreparedLaunch(launcher, kernel, (512,), (128,), [np.int64(5), np.float32(2.5), np.uint64(0xABC0)])
    prepared.launch()
    prepared.set(1, np.float32(-1.0))
    prepared.set(2, np.uint64(0xDEF0))
    prepared.launch()
    assert calls[0] == ((1234, 4, 1, 1, 128, 1, 1, 0, 77, 0), 5, 2.5, 0xABC0)
    assert calls[1] == ((1234, 4, 1, 1, 128, 1, 1, 0, 77, 0), 5, -1.0, 0xDEF0)


def test_cuda_repeated_launch_becomes_a_graph_and_a_rebind_drops_it(monkeypatch):
    """Without a GPU: the third launch in a row with no rebind captures a one-kernel graph, later
    launches replay it; a rebind goes back to the driver call until the launch repeats again."""
    from types import SimpleNamespace

    from isthmus.backends import cuda

    driver, replays, captures = [], [], []

    class FakeGraph:
        def launch(self, stream):
            replays.append(stream.ptr)

    def capture(prepared):
        captures.append(tuple(c[0] for c in prepared._cells))
        return FakeGraph()

    cp = SimpleNamespace(cuda=SimpleNamespace(driver=SimpleNamespace(launchKernel=lambda *a: driver.append(a[8]),
                                                                     CUDADriverError=RuntimeError),
                                              runtime=SimpleNamespace(getDevice=lambda: 0)))
    dev = SimpleNamespace(_cp=cp, index=0, id="cuda:0", stream=SimpleNamespace(ptr=77), _launch_graphs=True)
    launcher = SimpleNamespace(device=dev, grid=lambda k, g, l: ((g[0] // l[0],), l))
    monkeypatch.setattr(cuda.graphs, "one_kernel", lambda device, prepared: capture(prepared))
    kernel = SimpleNamespace(native=SimpleNamespace(ptr=1), name="k")
    prepared = cuda._PreparedLaunch(launcher, kernel, (64,), (64,), [np.int64(5), np.float32(2.5)])
    for _ in range(5):
        prepared.launch()
    assert (len(driver), len(captures), len(replays)) == (3, 1, 2)
    prepared.set(1, np.float32(4.0))
    prepared.launch()
    assert (len(driver), len(replays)) == (4, 2)  # the old graph holds the old value: not replayed
    for _ in range(3):
        prepared.launch()
    assert captures[-1] == (5, 4.0) and len(replays) == 1 + 2 and len(driver) == 6
    prepared.enqueue(SimpleNamespace(ptr=99))  # a stream capture's call: always the driver, on its stream
    assert driver[-1] == 99


ACCUMULATE = """
__kernel void acc(__global int* y, const int a, const int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] += a;
}
"""


def test_plan_repeated_many_times_counts_every_launch_and_follows_rebinds(dev):
    """Long runs of launches (CUDA: replayed as a one-kernel graph after the third) interleaved
    with rebinds: every launch runs once, with the value bound at the time."""
    n = 257
    k = dev.compile(ACCUMULATE, "acc")
    y = dev.zeros(n, np.int32)
    y2 = dev.zeros(n, np.int32)
    plan = k.prepare(y, 1, n, config=isthmus.LaunchConfig((320,), (64,)))
    expect, expect2 = 0, 0
    for rounds, a in [(10, 1), (1, 7), (5, -2), (2, 100)]:
        plan.bind("a", a)
        for _ in range(rounds):
            plan.launch()
        expect += rounds * a
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, expect, np.int32))
    plan.bind("y", y2)
    for _ in range(6):
        plan.launch()
        expect2 += 100
    plan.bind("n", 100)
    for _ in range(4):
        plan.launch()
    h = y2.to_numpy()
    np.testing.assert_array_equal(h[:100], np.full(100, expect2 + 400, np.int32))
    np.testing.assert_array_equal(h[100:], np.full(n - 100, expect2, np.int32))
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, expect, np.int32))  # untouched since the rebind


def test_eager_launches_repeated_and_varied_all_run(dev):
    """Eager calls with the same arguments (CUDA: memoized, then a graph) and with changing ones."""
    n = 100
    k = dev.compile(ACCUMULATE, "acc")
    y = dev.zeros(n, np.int32)
    cfg = isthmus.LaunchConfig((n,))
    total = 0
    for i in range(40):
        a = 3 if i % 4 else i  # mostly the same launch, now and then another
        k(y, a, n, config=cfg)
        total += a
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, total, np.int32))


def test_one_plan_launched_from_several_threads(dev):
    import threading

    n = 64
    k = dev.compile(ACCUMULATE, "acc")
    y = dev.zeros(n, np.int32)
    plan = k.prepare(y, 1, n, config=isthmus.LaunchConfig((n,)))
    errors = []

    def work():
        try:
            for _ in range(300):
                plan.launch()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, 1200, np.int32))


def test_graph_of_plans_that_replay_their_own_graphs(dev, rng):
    """A plan launched often enough to have its own graph, then captured into an isthmus Graph."""
    n = 50
    k = dev.compile(ACCUMULATE, "acc")
    y = dev.zeros(n, np.int32)
    plan = k.prepare(y, 2, n, config=isthmus.LaunchConfig((n,)))
    for _ in range(5):
        plan.launch()
    with dev.capture() as graph:
        plan.launch()
        plan.launch()
    for _ in range(4):
        graph.launch()
    graph.bind(1, "a", 10)
    graph.launch()
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, 5 * 2 + 4 * 4 + 12, np.int32))


def test_unpinned_plan_lets_a_closed_buffer_go_and_refuses_it(dev):
    """Plan(pin=False), behind Java's launch memo: closing a bound buffer frees its memory at once
    (a pinned plan keeps it), and the next launch is refused with a ClosedBufferError."""
    from isthmus.plan import Plan

    k = dev.compile(ACCUMULATE, "acc")
    before = dev.memory_in_use()
    y = dev.zeros(1 << 14, np.int32)
    plan = Plan(k, (y, 1, 1 << 14), isthmus.LaunchConfig((1 << 14,)), pin=False)
    plan.launch()
    np.testing.assert_array_equal(y.to_numpy()[:3], [1, 1, 1])
    y.close()
    dev.synchronize()
    assert dev.memory_in_use() == before
    with pytest.raises(isthmus.ClosedBufferError, match="closed buffer"):
        plan.launch()
    pinned = k.prepare(dev.zeros(1 << 14, np.int32), 1, 1 << 14, config=isthmus.LaunchConfig((1 << 14,)))
    assert dev.memory_in_use() == before + (1 << 16)  # the pinned plan holds its (temporary) buffer
    pinned.close()
    assert dev.memory_in_use() == before


def test_cuda_eager_memo_refills_scratch_first_then_keeps_a_repeated_launch_prepared():
    """Without a GPU: CudaLauncher.launch refills one scratch launch per grid for a launch seen once,
    prepares a launch seen twice and replays it from then on."""
    from types import SimpleNamespace

    from isthmus.backends import cuda
    from isthmus.device import KernelState

    made = []

    class Fake:
        def __init__(self, packed):
            self.packed, self.launches, self.refills, self._calm = list(packed), 0, [], 0
            made.append(self)

        def launch(self):
            self.launches += 1

        def refill(self, packed):
            self.refills.append(list(packed))

    launcher = object.__new__(cuda.CudaLauncher)
    launcher.prepare = lambda kernel, g, l, packed: Fake(packed)
    kernel = SimpleNamespace(name="k", _types=(np.float32,), _backend=KernelState())  # one float parameter
    g, l = (64,), (64,)
    launcher.launch(kernel, g, l, [np.float32(1)])  # first sighting: the scratch launch
    launcher.launch(kernel, g, l, [np.float32(2)])  # another first sighting: the same scratch
    assert len(made) == 1 and made[0].refills == [[1], [2]] and made[0]._calm < 0
    launcher.launch(kernel, g, l, [np.float32(1)])  # second sighting: prepared and launched
    launcher.launch(kernel, g, l, [np.float32(1)])  # replayed
    assert len(made) == 2 and made[1].packed == [1] and made[1].launches == 2
    launcher.launch(kernel, (128,), l, [np.float32(1)])  # another grid: its own scratch
    assert len(made) == 3 and made[2].refills == [[1]]


def test_cuda_none_for_a_buffer_is_a_null_pointer_whatever_the_launch_before():
    """Without a GPU: an optional buffer left out (None) reaches the kernel as a null device pointer,
    in a fresh parameter block, in a scratch block refilled after a launch that passed a buffer there,
    and through set(); never the address of Python's None (an object cell), which the kernel would
    read as a pointer (CUDA_ERROR_ILLEGAL_ADDRESS in the decode-attention and sampling ops)."""
    import ctypes
    from types import SimpleNamespace

    from isthmus.backends import cuda
    from isthmus.device import KernelState

    seen = []

    def launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        p = (ctypes.c_void_p * 2).from_address(params)
        seen.append((ctypes.c_uint64.from_address(p[0]).value, ctypes.c_uint64.from_address(p[1]).value))

    cp = SimpleNamespace(cuda=SimpleNamespace(driver=SimpleNamespace(launchKernel=launch_kernel,
                                                                     CUDADriverError=RuntimeError),
                                              runtime=SimpleNamespace(getDevice=lambda: 0)))
    dev = SimpleNamespace(_cp=cp, index=0, id="cuda:0", stream=SimpleNamespace(ptr=77), _launch_graphs=False)
    launcher = object.__new__(cuda.CudaLauncher)
    launcher.device, launcher._cp = dev, cp
    launcher.grid = lambda k, g, l: ((g[0] // l[0],), l)
    launcher.dynamic_shared = lambda k: 0
    kernel = SimpleNamespace(native=SimpleNamespace(ptr=1), name="k", _types=(None, None), _backend=KernelState())
    a, b = cuda._DevicePointer(0xA000), cuda._DevicePointer(0xB000)
    launcher.launch(kernel, (64,), (64,), [a, b])      # the scratch block: a pointer in slot 1
    launcher.launch(kernel, (64,), (64,), [a, None])   # refilled: slot 1 left out
    launcher.launch(kernel, (64,), (64,), [b, None])   # first seen: the scratch again
    launcher.launch(kernel, (64,), (64,), [b, None])   # second sighting: a fresh prepared block
    assert seen == [(0xA000, 0xB000), (0xA000, 0), (0xB000, 0), (0xB000, 0)]
    fresh = cuda._PreparedLaunch(launcher, kernel, (64,), (64,), [None, b])
    fresh.launch()
    fresh.set(1, None)
    fresh.set(0, a)
    fresh.launch()
    assert seen[-2:] == [(0, 0xB000), (0xA000, 0)]
