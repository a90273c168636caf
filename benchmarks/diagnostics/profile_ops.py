"""Where the host time of an allocating library call goes: cProfile of many tiny calls.

    python -m benchmarks profile_ops [--device ID] [--calls N] [--top K] [--big]

For each op, the allocating call and the out= call, the host µs per call and the top entries
by own time. A diagnostic (nothing is recorded in benchmarks/results/).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats

import numpy as np

from isthmus import measure

SMOKE = ["--calls", "20", "--top", "3"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--top", type=int, default=14)
    p.add_argument("--big", action="store_true", help="8192x8192 softmax/transpose and a 64M sum, 20 calls each")
    a = p.parse_args(argv)
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
    wall = measure.WallClock(dev.synchronize)
    for name, fn in cases.items():
        warm = 3 if a.big else min(200, a.calls)
        host_us = measure.per_call_us(fn, a.calls, dev.synchronize, rounds=1, warmup=warm)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(a.calls):
            fn()
        prof.disable()
        dev.synchronize()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(a.top)
        body = "\n".join(line for line in out.getvalue().splitlines() if line.strip()[:1].isdigit() or "ncalls" in line)
        with_device_us = measure.device_times(wall, fn, repeat=1, warmup=0, batch=a.calls).median * 1e3
        print(f"== {dev.id} {name}: {host_us:.2f} us per call (host), "
              f"{with_device_us:.1f} us per call with the device\n{body}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
