"""Timing: device time with device events (median of repeats, after warm-up) and host time."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def device_ms(dev, fn: Callable[[], object], repeat: int = 10, warmup: int = 2, batch: int = 1) -> float:
    """Median device time of ``fn()`` in milliseconds: each repeat times ``batch`` back-to-back
    calls between two device events (so the host's enqueue overlaps the device's work, as in a
    real pipeline) and divides by ``batch``."""
    for _ in range(warmup):
        fn()
    dev.synchronize()
    times = []
    for _ in range(repeat):
        with dev.timer() as t:
            for _ in range(batch):
                fn()
        times.append(t.ms / batch)
    return statistics.median(times)


def host_ms(fn: Callable[[], object], repeat: int = 5, warmup: int = 1, sync: Callable[[], object] | None = None) -> float:
    """Median wall time of ``fn()`` (then ``sync()``) in milliseconds."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def per_call_us(fn: Callable[[], object], calls: int, sync: Callable[[], object] | None = None, rounds: int = 5,
                warmup: int = 1, per_call: int = 1) -> float:
    """Median host time per call of ``calls`` back-to-back calls, in microseconds (the launch
    overhead; ``sync`` waits for the device after each round, outside the timed loop). A call
    that makes ``per_call`` launches counts as that many."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        if sync:
            sync()
        times.append((t1 - t0) / (calls * per_call) * 1e6)
    return statistics.median(times)
