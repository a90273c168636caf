"""Host CPU time per call (time.thread_time of the calling thread, the least of many rounds) of
tiny library ops, allocating their result and with out=, an eager kernel call and a plan launch:
the host overhead, measured in a way that other processes on a busy machine disturb less than
wall time. Compare two checkouts by running this with each on PYTHONPATH, alternately:

    python -m benchmarks host_cpu_per_call [--device opencl:0] [--calls 300] [--rounds 40]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import isthmus
from isthmus import measure, ops

SMOKE = ["--calls", "10", "--rounds", "2"]

AFFINE = ("__kernel void f(const long n, const float a, __global const float* x, __global float* y) "
          "{ long i = get_global_id(0); if (i < n) y[i] = a * x[i] + y[i]; }")


def calls(dev) -> dict:
    rng = np.random.default_rng(0)
    x, y = (dev.asarray(rng.standard_normal(1024).astype(np.float32)) for _ in range(2))
    m = dev.asarray(rng.standard_normal((8, 32)).astype(np.float32))
    a, b = (dev.asarray(rng.standard_normal((16, 16)).astype(np.float32)) for _ in range(2))
    s1, sm, tr, gm = ops.sum(x), ops.softmax(m), ops.transpose(m), ops.gemm(a, b)
    k = dev.compile(AFFINE, "f")
    cfg = isthmus.LaunchConfig((1024,), (64,))
    plan = k.prepare(1024, 0.5, x, y, config=cfg)

    def alloc(fn):
        return lambda: fn().close()
    return {
        "axpy": lambda: ops.axpy(0.5, x, y),
        "sum": alloc(lambda: ops.sum(x)), "sum_out": lambda: ops.sum(x, out=s1),
        "softmax": alloc(lambda: ops.softmax(m)), "softmax_out": lambda: ops.softmax(m, out=sm),
        "transpose": alloc(lambda: ops.transpose(m)), "transpose_out": lambda: ops.transpose(m, out=tr),
        "gemm": alloc(lambda: ops.gemm(a, b)), "gemm_out": lambda: ops.gemm(a, b, gm),
        "kernel_call": lambda: k(1024, 0.5, x, y, config=cfg),
        "plan_launch": plan.launch,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args(argv)
    dev = isthmus.device(args.device)
    out = {}
    for name, fn in calls(dev).items():
        t = measure.per_call_times(fn, args.calls, dev.synchronize, rounds=args.rounds,
                                   warmup=min(200, 20 * args.calls), clock=time.thread_time)
        out[name] = round(t.low, 2)  # the least: CPU time only grows with disturbance
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
