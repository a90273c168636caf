"""Where the host time of an allocating library call goes: cProfile of many tiny calls.

    python benchmarks/profile_ops.py [--device ID] [--calls N] [--top K]

For each op, the allocating call and the out= call, the host µs per call and the top entries
by own time. A diagnostic (nothing is recorded in benchmarks/results/).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--top", type=int, default=14)
    p.add_argument("--big", action="store_true", help="8192x8192 softmax/transpose and a 64M sum, 20 calls each")
    a = p.parse_args()
    import isthmus

    dev = isthmus.device(a.device)
    x = dev.asarray(np.random.rand(1024).astype(np.float32))
    s = dev.empty(1, np.float32)
    m = dev.asarray(np.random.rand(8, 32).astype(np.float32))
    mo = dev.empty((8, 32), np.float32)
    cases = {"sum": lambda: isthmus.ops.sum(x), "sum out=": lambda: isthmus.ops.sum(x, out=s),
             "softmax": lambda: isthmus.ops.softmax(m), "softmax out=": lambda: isthmus.ops.softmax(m, out=mo),
             "empty(1)": lambda: dev.empty(1, np.float32)}
    if a.big:
        big = dev.asarray(np.random.rand(8192, 8192).astype(np.float32))
        big_out = dev.empty((8192, 8192), np.float32)
        v = dev.asarray(np.random.rand(1 << 26).astype(np.float32))
        cases = {"softmax 8192^2": lambda: isthmus.ops.softmax(big),
                 "softmax 8192^2 out=": lambda: isthmus.ops.softmax(big, out=big_out),
                 "transpose 8192^2": lambda: isthmus.ops.transpose(big),
                 "transpose 8192^2 out=": lambda: isthmus.ops.transpose(big, out=big_out),
                 "sum 64M": lambda: isthmus.ops.sum(v)}
        a.calls = 20
    for name, fn in cases.items():
        for _ in range(200 if not a.big else 3):
            fn()
        dev.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        t1 = time.perf_counter()
        dev.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(a.calls):
            fn()
        prof.disable()
        dev.synchronize()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(a.top)
        body = "\n".join(line for line in out.getvalue().splitlines() if line.strip()[:1].isdigit() or "ncalls" in line)
        dev.synchronize()
        t2 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        dev.synchronize()
        t3 = time.perf_counter()
        print(f"== {dev.id} {name}: {(t1 - t0) / a.calls * 1e6:.2f} us per call (host), "
              f"{(t3 - t2) / a.calls * 1e6:.1f} us per call with the device\n{body}\n")


if __name__ == "__main__":
    main()
