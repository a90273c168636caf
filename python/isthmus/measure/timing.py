"""Timing, one way for every benchmark: clocks (device events where the backend has them, else
the wall clock around a synchronize), warm-up, repeats as a :class:`Sample` (median and spread),
candidates in alternating rounds, and the copy-bandwidth ceiling."""
from __future__ import annotations

import dataclasses
import statistics
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import numpy as np

from ..device import Timing
from ..errors import InvalidArgumentError

# CPU devices: a pause before a timed round. OpenBLAS's worker threads keep spinning on the cores
# for 50-300 ms after a NumPy gemm, so a round that follows one runs PoCL's threads beside them
# (gemm 512^3 on the 2-core VM: isthmus 76 GFLOP/s right after NumPy's round, 126 after 0.3 s).
CPU_SETTLE_S = 0.3


# ---- statistics -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Sample:
    """Repeated timings of one thing (any unit): the median, the least and the most, and how many."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, times: Sequence[float]) -> "Sample":
        if not times:
            raise InvalidArgumentError("a Sample needs at least one timing; got none (repeat must be >= 1)")
        return cls(float(statistics.median(times)), float(min(times)), float(max(times)), len(times))

    @property
    def spread(self) -> float:
        """(most - least) / median: how far apart the repeats were, relative to the figure.
        Two candidates closer than their spread are not told apart by this measurement."""
        return (self.high - self.low) / self.median if self.median else float("inf")

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "spread": self.spread}


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        least = 0 if name == "warmup" else 1
        if not isinstance(value, int) or value < least:
            raise InvalidArgumentError(f"{name} must be an integer >= {least}; got {value!r}")


# ---- clocks -----------------------------------------------------------------------------------
class WallClock:
    """The wall clock around ``sync()`` (for work with no device events: NumPy on the host, a peer
    on its own queue): the timed region starts after a sync and ends after one, so queued work
    is inside it."""

    def __init__(self, sync: Callable[[], object] | None = None):
        self._sync = sync or (lambda: None)

    def synchronize(self) -> None:
        self._sync()

    @contextmanager
    def timer(self) -> Iterator[Timing]:
        timing = Timing()
        self._sync()
        t0 = time.perf_counter()
        yield timing
        self._sync()
        timing.ms = (time.perf_counter() - t0) * 1e3


class TorchClock:
    """CUDA events through torch, on torch's current stream of ``device`` (a torch peer's work)."""

    def __init__(self, torch, device=None):
        self._torch = torch
        self._device = device

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self._device)

    @contextmanager
    def timer(self) -> Iterator[Timing]:
        timing = Timing()
        start = self._torch.cuda.Event(enable_timing=True)
        end = self._torch.cuda.Event(enable_timing=True)
        start.record()
        yield timing
        end.record()
        end.synchronize()
        timing.ms = start.elapsed_time(end)


class CupyClock:
    """CUDA events through CuPy on ``stream`` (a CuPy stream that is not an isthmus device's)."""

    def __init__(self, stream):
        self._stream = stream

    def synchronize(self) -> None:
        self._stream.synchronize()

    @contextmanager
    def timer(self) -> Iterator[Timing]:
        import cupy

        timing = Timing()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(self._stream)
        yield timing
        end.record(self._stream)
        end.synchronize()
        timing.ms = cupy.cuda.get_elapsed_time(start, end)


class QueueClock:
    """OpenCL profiling markers on a PyOpenCL ``queue`` made with profiling enabled (a peer's own
    queue, such as CLBlast's)."""

    def __init__(self, queue):
        self._queue = queue

    def synchronize(self) -> None:
        self._queue.finish()

    @contextmanager
    def timer(self) -> Iterator[Timing]:
        import pyopencl as cl

        timing = Timing()
        start = cl.enqueue_marker(self._queue)
        yield timing
        end = cl.enqueue_marker(self._queue)
        end.wait()
        timing.ms = (end.profile.end - start.profile.end) * 1e-6


# A clock is anything with ``synchronize()`` and a ``timer()`` context manager whose value has
# ``ms`` once the block ends: an isthmus Device (its own events), WallClock, TorchClock.


def device_times(clock, fn: Callable[[], object], repeat: int = 10, warmup: int = 2, batch: int = 1) -> Sample:
    """Milliseconds per call of ``fn()``: each repeat times ``batch`` back-to-back calls with
    ``clock`` (a device's events, so the host's enqueue overlaps the device's work as in a real
    pipeline) and divides by ``batch``; after ``warmup`` calls and a synchronize."""
    _check_counts(repeat=repeat, warmup=warmup, batch=batch)
    for _ in range(warmup):
        fn()
    clock.synchronize()
    times = []
    for _ in range(repeat):
        with clock.timer() as t:
            for _ in range(batch):
                fn()
        times.append(t.ms / batch)
    return Sample.of(times)


def device_ms(dev, fn: Callable[[], object], repeat: int = 10, warmup: int = 2, batch: int = 1) -> float:
    """The median of :func:`device_times` (``dev``: a device or any clock)."""
    return device_times(dev, fn, repeat, warmup, batch).median


def host_times(fn: Callable[[], object], repeat: int = 5, warmup: int = 1,
               sync: Callable[[], object] | None = None) -> Sample:
    """Wall milliseconds of ``fn()`` then ``sync()``, one call per repeat, after ``warmup`` calls."""
    return device_times(WallClock(sync), fn, repeat, warmup, 1)


def host_ms(fn: Callable[[], object], repeat: int = 5, warmup: int = 1,
            sync: Callable[[], object] | None = None) -> float:
    """The median of :func:`host_times`."""
    return host_times(fn, repeat, warmup, sync).median


def per_call_times(fn: Callable[[], object], calls: int, sync: Callable[[], object] | None = None, rounds: int = 5,
                   warmup: int = 1, per_call: int = 1, clock: Callable[[], float] = time.perf_counter) -> Sample:
    """Host microseconds per call over rounds of ``calls`` back-to-back calls (the launch overhead:
    ``sync`` waits for the device after each round, outside the timed loop). A call that makes
    ``per_call`` launches counts as that many. ``clock``: seconds from the wall clock, or e.g.
    ``time.thread_time`` for the calling thread's CPU time (which other processes disturb less)."""
    _check_counts(calls=calls, rounds=rounds, warmup=warmup, per_call=per_call)
    sync = sync or (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        t0 = clock()
        for _ in range(calls):
            fn()
        t1 = clock()
        sync()
        times.append((t1 - t0) / (calls * per_call) * 1e6)
    return Sample.of(times)


def per_call_us(fn: Callable[[], object], calls: int, sync: Callable[[], object] | None = None, rounds: int = 5,
                warmup: int = 1, per_call: int = 1) -> float:
    """The median of :func:`per_call_times`."""
    return per_call_times(fn, calls, sync, rounds, warmup, per_call).median


def interleaved(rounds_of: dict[str, Callable[[], float]], rounds: int = 5) -> dict[str, Sample]:
    """Time several candidates in alternating rounds (A B C, A B C, ...): each value of
    ``rounds_of`` times one round of its candidate and returns the figure (e.g. :func:`round_of`);
    a candidate's figures over ``rounds`` make its Sample. Drift (clock boost, other load on the
    machine) then touches every candidate alike, which timing one after the other does not.
    Warm each candidate up before (a compile or a first allocation is no round)."""
    _check_counts(rounds=rounds)
    times: dict[str, list] = {name: [] for name in rounds_of}
    for _ in range(rounds):
        for name, one_round in rounds_of.items():
            times[name].append(one_round())
    return {name: Sample.of(t) for name, t in times.items()}


def round_of(clock, fn: Callable[[], object], batch: int = 1) -> Callable[[], float]:
    """One round for :func:`interleaved`: ``batch`` back-to-back calls of ``fn`` timed with
    ``clock``, in milliseconds per call."""
    _check_counts(batch=batch)
    return lambda: device_times(clock, fn, repeat=1, warmup=0, batch=batch).median


def settled(one_round: Callable[[], float], pause_s: float = CPU_SETTLE_S) -> Callable[[], float]:
    """``one_round`` after an untimed pause of ``pause_s`` (CPU devices: the threads the previous
    round left spinning, OpenBLAS's or PoCL's, go idle first; see CPU_SETTLE_S)."""
    def round_after_pause() -> float:
        time.sleep(pause_s)
        return one_round()
    return round_after_pause


# ---- the bandwidth ceiling --------------------------------------------------------------------
def copy_bandwidth(dev, nbytes: int | None = None, repeat: int = 10) -> float:
    """Device-to-device copy of ``nbytes`` (default: 1 GiB on a GPU, 64 MiB elsewhere), in GB/s
    counting bytes read plus bytes written: the ceiling of a memory-bound kernel on ``dev``."""
    if nbytes is None:
        nbytes = (1 << 30) if dev.kind == "gpu" else (64 << 20)
    if nbytes < 4:
        raise InvalidArgumentError(f"copy_bandwidth needs at least 4 bytes to copy; got {nbytes}")
    n = nbytes // 4
    src = dev.asarray(np.ones(n, np.float32))  # not zeros: a copy of zeros can run faster than data does
    dst = dev.empty(n, np.float32)
    try:
        ms = device_ms(dev, lambda: dev.allocator.copy(dst._mem, src._mem, n * 4), repeat=repeat, warmup=3,
                       batch=10 if dev.kind == "gpu" else 1)
    finally:
        src.close()
        dst.close()
    return 2 * n * 4 / ms / 1e6
