"""Closing a buffer while a launch or copy on it is on its way to the queue (DESIGN.md, "Concurrency
rule"): the launch either runs on memory that stays valid until it is enqueued or raises
ClosedBufferError; it never packs a closed buffer to NULL and never writes memory that another
owner was handed meanwhile.

The interleavings are forced, not hoped for: a line tracer runs the call and, at its k-th executed
line of isthmus code (for every k from the first line to the last), closes the victim buffer and
lets a foreign owner allocate memory of the victim's size at once and fill it with a sentinel:
the allocation that receives the victim's memory if the close handed it back to the pool or the
driver. After the call, the foreign memory must still hold the sentinel, and every open output
must hold NumPy's answer. A stress test with many threads at a tiny switch interval follows.
"""
from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

import isthmus

_PACKAGE = os.path.dirname(isthmus.__file__)
SENTINEL = np.float32(-7777.0)

SRC = """
__kernel void affine(const long n, const float a, __global const float* x, __global float* y)
{
    const long i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _cfg(n, wg=16):
    return isthmus.LaunchConfig((-(-n // wg) * wg,), (wg,))


class Closer:
    """Runs ``call()`` with a tracer that, at the ``step``-th line executed in the isthmus package,
    has another thread close ``victim`` and hand memory of its size to a foreign owner (filled
    with the sentinel). The traced thread waits for that thread, unless it blocks on a lock the
    traced thread holds (as it would in a real race): then the call goes on and the close
    completes when the lock is released."""

    WAIT = 0.1  # seconds the traced thread waits for the closing thread

    def __init__(self, dev, victim: isthmus.Buffer, step: int):
        self.dev, self.victim, self.step = dev, victim, step
        self.lines = 0
        self.foreign: list[isthmus.Buffer] = []
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines += 1
            if self.lines == self.step:
                self.thread = threading.Thread(target=self._strike)
                self.thread.start()
                self.thread.join(self.WAIT)
        return self._local

    def _global(self, frame, event, arg):
        if frame.f_code.co_filename.startswith(_PACKAGE):
            return self._local
        return None

    def _strike(self) -> None:
        try:
            victim = self.victim
            shape = victim.shape
            victim.close()
            for _ in range(2):  # the pool's newest block of that size, and the next one
                f = self.dev.empty(shape, np.float32)
                f.copy_from(np.full(shape, SENTINEL, np.float32))
                self.foreign.append(f)
        except BaseException as exc:  # noqa: BLE001 - reported by run()
            self.error = exc

    def run(self, call):
        """(raised ClosedBufferError, whether the close happened)"""
        sys.settrace(self._global)
        try:
            call()
            raised = False
        except isthmus.ClosedBufferError:
            raised = True
        finally:
            sys.settrace(None)
            if self.thread is not None:
                self.thread.join()
        assert self.error is None, f"closing thread: {self.error!r}"
        return raised, self.thread is not None

    def foreign_intact(self) -> bool:
        self.dev.synchronize()
        ok = all(np.all(f.to_numpy() == SENTINEL) for f in self.foreign)
        for f in self.foreign:
            f.close()
        return ok


def _explore(dev, scenario, victim_name: str, max_steps: int = 400) -> dict:
    """Close ``victim_name`` at every step of the scenario's call; returns counts by outcome."""
    outcomes = {"raised": 0, "ran": 0}
    step = 1
    while step <= max_steps:
        s = scenario()
        closer = Closer(dev, s.buffers[victim_name], step)
        raised, struck = closer.run(s.call)
        if not struck:  # the call finished before this step: every point was covered
            s.close()
            break
        assert closer.foreign_intact(), f"step {step}: the launch wrote memory a new owner holds"
        if not raised:
            s.verify()
        outcomes["raised" if raised else "ran"] += 1
        s.close()
        step += 1
    assert step > 1
    return outcomes


class Scenario:
    """A call over fresh buffers, and what it must have computed into the ones still open."""

    def __init__(self, buffers: dict, call, expected: dict):
        self.buffers, self.call, self.expected = buffers, call, expected

    def verify(self) -> None:
        for name, want in self.expected.items():
            b = self.buffers[name]
            if not b.closed:
                np.testing.assert_allclose(b.to_numpy(), want, rtol=1e-5, atol=1e-5, err_msg=name)

    def close(self) -> None:
        for b in self.buffers.values():
            b.close()


def _pair(dev, rng, n):
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return xh, yh, dev.asarray(xh), dev.asarray(yh)


# ---- one scenario per launch path; each closes, in turn, every buffer it uses ------------------
N = 67


def eager_kernel(dev, rng, warm):
    k = dev.compile(SRC, "affine")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        if warm:  # the packed arguments are cached on the buffers (the fast path)
            k(N, 0.0, x, y, config=_cfg(N))
        return Scenario({"x": x, "y": y}, lambda: k(N, 2.0, x, y, config=_cfg(N)), {"y": 2 * xh + yh})
    return make


def library_axpy(dev, rng, warm):
    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        if warm:
            isthmus.ops.axpy(0.0, x, y)
        return Scenario({"x": x, "y": y}, lambda: isthmus.ops.axpy(2.0, x, y), {"y": 2 * xh + yh})
    return make


def library_sum(dev, rng, warm):
    def make():
        xh, _, x, out = _pair(dev, rng, N)
        out = dev.zeros(1, np.float32)
        if warm:
            isthmus.ops.sum(x, out=out)
        return Scenario({"x": x, "out": out}, lambda: isthmus.ops.sum(x, out=out),
                        {"out": [xh.sum(dtype=np.float64)]})
    return make


def library_softmax(dev, rng, warm):
    def make():
        xh = rng.standard_normal((5, 13)).astype(np.float32)
        x, y = dev.asarray(xh), dev.zeros((5, 13), np.float32)
        if warm:
            isthmus.ops.softmax(x, out=y)
        e = np.exp(xh - xh.max(axis=1, keepdims=True))
        return Scenario({"x": x, "y": y}, lambda: isthmus.ops.softmax(x, out=y), {"y": e / e.sum(axis=1, keepdims=True)})
    return make


def pinned_plan(dev, rng, warm):
    k = dev.compile(SRC, "affine")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        plan = k.prepare(N, 2.0, x, y, config=_cfg(N))
        s = Scenario({"x": x, "y": y}, plan.launch, {"y": 2 * xh + yh})
        return s
    return make


def unpinned_plan(dev, rng, warm):
    """Java's eager-launch memo: the plan holds the Buffers, not their memory."""
    from isthmus.plan import Plan

    k = dev.compile(SRC, "affine")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        plan = Plan(k, (N, 2.0, x, y), _cfg(N), pin=False)
        if warm:
            plan.bind("a", 2.0)
        return Scenario({"x": x, "y": y}, plan.launch, {"y": 2 * xh + yh})
    return make


def plan_rebind(dev, rng, warm):
    k = dev.compile(SRC, "affine")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        other = dev.zeros(N, np.float32)
        plan = k.prepare(N, 2.0, other, y, config=_cfg(N))
        return Scenario({"x": x, "y": y, "other": other}, lambda: plan.bind("x", x).launch(), {"y": 2 * xh + yh})
    return make


def graph_replay(dev, rng, warm):
    k = dev.compile(SRC, "affine")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        with dev.capture() as graph:
            k(N, 2.0, x, y, config=_cfg(N))
        return Scenario({"x": x, "y": y}, graph.launch, {"y": 2 * xh + yh})
    return make


def graph_bind(dev, rng, warm):
    k = dev.compile(SRC, "affine")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        other = dev.zeros(N, np.float32)
        with dev.capture() as graph:
            k(N, 2.0, other, y, config=_cfg(N))
        return Scenario({"x": x, "y": y, "other": other}, lambda: graph.bind(0, "x", x).launch(),
                        {"y": 2 * xh + yh})
    return make


def fused(dev, rng, warm):
    f = isthmus.fuse("out = a * x + y")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        out = dev.zeros(N, np.float32)
        if warm:
            f(2.0, x, y, out=out)
        return Scenario({"x": x, "y": y, "out": out}, lambda: f(2.0, x, y, out=out), {"out": 2 * xh + yh})
    return make


def fused_prepare(dev, rng, warm):
    f = isthmus.fuse("out = a * x + y")

    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        out = dev.zeros(N, np.float32)
        return Scenario({"x": x, "y": y, "out": out}, lambda: f.prepare(2.0, x, y, out=out).launch(),
                        {"out": 2 * xh + yh})
    return make


def copies(dev, rng, warm):
    def make():
        xh, yh, x, y = _pair(dev, rng, N)
        host = np.empty(N, np.float32)

        def call():
            x.copy_from(yh)
            x.to_numpy(out=host)
            z = x.to(dev)
            v = x.reshape(N, 1)
            np.testing.assert_array_equal(z.to_numpy(), yh)
            np.testing.assert_array_equal(v.to_numpy()[:, 0], yh)
            z.close()
            v.close()
        return Scenario({"x": x, "y": y}, call, {"x": yh})
    return make


# path -> (scenario, the buffers closed in turn, whether a repeated call takes another path)
SCENARIOS = {
    "eager kernel": (eager_kernel, ("x", "y"), True),
    "library axpy": (library_axpy, ("x", "y"), True),
    "library sum": (library_sum, ("x", "out"), True),
    "library softmax": (library_softmax, ("x", "y"), True),
    "pinned plan": (pinned_plan, ("x", "y"), False),
    "unpinned plan": (unpinned_plan, ("x", "y"), True),
    "plan rebind": (plan_rebind, ("x", "y"), False),
    "graph replay": (graph_replay, ("x", "y"), False),
    "graph rebind": (graph_bind, ("x", "y"), False),
    "fused call": (fused, ("x", "y", "out"), True),
    "fused prepare": (fused_prepare, ("x", "out"), False),
    "copies": (copies, ("x",), False),
}
CASES = [(path, warm) for path, (_, _, repeats) in SCENARIOS.items() for warm in ((False, True) if repeats else (False,))]


@pytest.mark.parametrize("path,warm", CASES, ids=[f"{p}-{'repeated' if w else 'first'}" for p, w in CASES])
def test_close_at_every_step_of_a_launch_raises_or_runs_on_held_memory(dev, rng, path, warm):
    make, victims, _ = SCENARIOS[path]
    total = {"raised": 0, "ran": 0}
    for victim in victims:
        got = _explore(dev, make(dev, rng, warm), victim)
        for k, v in got.items():
            total[k] += v
    # the close was forced both before the checks (an error) and after them (the launch runs)
    assert total["raised"] > 0 and total["ran"] > 0, total


def test_a_closed_buffer_never_packs_to_null(dev):
    x = dev.zeros(8, np.float32)
    x.close()
    with pytest.raises(isthmus.ClosedBufferError):
        dev.launcher.buffer_arg(x)
    with pytest.raises(isthmus.ClosedBufferError):
        x._launch_arg()
    assert x._arg is None


def test_closing_during_a_launch_frees_the_memory_once_the_launch_let_go(dev):
    """A launch holds the memory; the memory goes back when the launch is enqueued, not later."""
    before = dev.memory_in_use()
    k = dev.compile(SRC, "affine")
    x, y = dev.zeros(N, np.float32), dev.zeros(N, np.float32)
    seen = []
    real = dev.launcher.launch

    def closing(kernel, g, loc, packed):
        x.close()  # another thread closes x after the checks, before the enqueue
        seen.append(dev.memory_in_use())
        real(kernel, g, loc, packed)

    dev.launcher.launch = closing
    try:
        k(N, 1.0, x, y, config=_cfg(N))
    finally:
        del dev.launcher.launch
    del closing, real
    dev.synchronize()
    y.close()
    assert seen[0] >= before + 2 * N * 4  # x's memory was still held by the launch
    assert dev.memory_in_use() == before  # and let go afterwards: nothing leaks


# ---- stress: many threads, a tiny switch interval, PoCL or whatever device is there ------------
def test_threads_closing_while_others_launch_never_corrupt_or_crash(dev, rng):
    """Launching threads run library ops, eager kernels and plans on shared buffers that closing
    threads close and replace; every thread also keeps private buffers whose results are checked
    against NumPy after every call (a launch writing freed memory would land in one of them)."""
    k = dev.compile(SRC, "affine")
    n, seconds, launchers, closers = 257, 2.0, 4, 2
    shared = [dev.zeros(n, np.float32) for _ in range(8)]
    lock = threading.Lock()
    errors, counts = [], {"ok": 0, "closed": 0, "checked": 0}
    stop = time.monotonic() + seconds
    switch = sys.getswitchinterval()

    def pick():
        with lock:
            return shared[int(rng.integers(len(shared)))]

    def launcher(seed):
        r = np.random.default_rng(seed)
        xh = r.standard_normal(n).astype(np.float32)
        x = dev.asarray(xh)
        try:
            i = 0
            while time.monotonic() < stop:
                s = pick()
                try:
                    which = i % 4
                    if which == 0:
                        isthmus.ops.axpy(1.0, x, s)
                    elif which == 1:
                        k(n, 0.5, x, s, config=_cfg(n))
                    elif which == 2:
                        isthmus.ops.scale(2.0, s, out=s)  # in place (axpy refuses y over x)
                    else:
                        k.prepare(n, 0.25, s, s, config=_cfg(n)).launch()
                    with lock:
                        counts["ok"] += 1
                except isthmus.ClosedBufferError:
                    with lock:
                        counts["closed"] += 1
                # a private result in a fresh allocation (likely memory a closed shared buffer had):
                # y += 2 x, checked against NumPy, while other threads' launches are in flight
                yh = r.standard_normal(n).astype(np.float32)
                y = dev.asarray(yh)
                isthmus.ops.axpy(2.0, x, y)
                got = y.to_numpy()
                y.close()
                if not np.allclose(got, yh + np.float32(2) * xh, rtol=1e-5, atol=1e-4):
                    errors.append(f"private result corrupted after {i} calls")
                    return
                with lock:
                    counts["checked"] += 1
                i += 1
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(repr(exc))
        finally:
            x.close()

    def closer():
        while time.monotonic() < stop:
            with lock:
                j = int(rng.integers(len(shared)))
                old, shared[j] = shared[j], dev.zeros(n, np.float32)
            old.close()
            time.sleep(0)

    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=launcher, args=(int(rng.integers(1 << 30)),)) for _ in range(launchers)]
        threads += [threading.Thread(target=closer) for _ in range(closers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 60)
    finally:
        sys.setswitchinterval(switch)
    assert not any(t.is_alive() for t in threads)
    dev.synchronize()
    for s in shared:
        s.close()
    assert not errors, errors[:5]
    assert counts["checked"] > 0 and counts["ok"] > 0, counts


# ---- the CUDA backend's packing, without a GPU -------------------------------------------------
def test_cuda_packed_pointer_holds_the_memory_and_the_launch_memo_does_not():
    """A CUDA buffer packs to a np.uint64 that holds its CuPy memory (a launch holding it keeps the
    memory from CuPy's pool); the launch memo keeps plain pointer values, so a closed buffer's
    memory is not kept alive by the launches it was used in."""
    import gc
    import weakref
    from types import SimpleNamespace

    from isthmus.backends import cuda

    class Mem:  # stands in for a cupy MemoryPointer
        ptr = 0xABC0

    class Prepared:
        def __init__(self, packed):
            self._calm = 0

        def launch(self):
            pass

        def refill(self, packed):
            pass

    from isthmus.device import KernelState

    launcher = object.__new__(cuda.CudaLauncher)
    launcher.prepare = lambda kernel, g, l, packed: Prepared(packed)
    mem = Mem()
    gone = weakref.ref(mem)
    buf = SimpleNamespace(_mem=mem, _ptr=mem.ptr, _dt="float32")
    arg = launcher.buffer_arg(buf)
    assert arg == 0xABC0 and hash(arg) == hash(0xABC0) and arg.mem is mem
    assert launcher.native_arg(arg).__class__ is np.uint64 and launcher.memory_of(arg) is mem
    kernel = SimpleNamespace(name="k", _types=(np.int64, None), _backend=KernelState())  # (long n, a buffer)
    for _ in range(3):  # first sighting, second (prepared), replay
        launcher.launch(kernel, (64,), (64,), [np.int64(1), arg])
    memo = kernel._backend.memo
    assert all(v.__class__ is not cuda._DevicePointer for key in memo.prepared.table for v in key)
    buf._mem, buf._dt = None, None  # the buffer is closed
    with pytest.raises(isthmus.ClosedBufferError):
        launcher.buffer_arg(buf)
    del mem, arg
    gc.collect()
    assert gone() is None  # nothing isthmus keeps holds the memory of a closed buffer
    zero = launcher.buffer_arg(SimpleNamespace(_mem=None, _ptr=0, _dt="float32"))  # an open zero-size buffer
    assert zero == 0


def test_two_threads_closing_one_buffer_count_it_closed_once(dev):
    """close() is idempotent across threads: a second close at any step of the first does nothing
    (the count of open buffers stays right, and nothing raises)."""
    before = isthmus.live_buffers()
    step = 1
    while True:
        b = dev.zeros(3, np.float32)
        lines, errors = [0], []

        def other():
            try:
                b.close()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def local(frame, event, arg):
            if event == "line":
                lines[0] += 1
                if lines[0] == step:
                    t = threading.Thread(target=other)
                    t.start()
                    t.join()
            return local

        sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename.startswith(_PACKAGE) else None)
        try:
            b.close()
        finally:
            sys.settrace(None)
        assert not errors, errors
        assert b.closed and isthmus.live_buffers() == before, f"step {step}"
        if lines[0] < step:
            break
        step += 1
    assert step > 2
