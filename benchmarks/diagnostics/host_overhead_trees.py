"""Host time per library call of two source trees, with one harness for both (issue 25's bar: no
op more than 3% slower than at 089fb2e).

    python -m benchmarks host_overhead_trees OLD_TREE NEW_TREE [--backend opencl cuda] [--rounds 3] [--clock thread]
                                             [--calls 20000] [--kind gpu|cpu] [--mode nolaunch] [--out DIR]

Each tree is a folder with ``python/`` and ``opencl/`` (a checkout, or ``git archive`` of a commit).
Each (tree, backend) runs in a process of its own (PYTHONPATH and ISTHMUS_KERNEL_DIR at that tree, a
program cache per tree), ``--rounds`` times in alternating order (new, old, old, new, ...). The child
calls only the public API both trees have (``isthmus.ops.axpy/scale/softmax/transpose/gemm/sum/max``,
positional arguments, ``out=``) through the same lambdas, on the tiny problems of ``isthmus bench``
(n=1024, 8x32, 16^3), so the harness costs both trees alike (``isthmus bench``'s own table goes
through each tree's workload layer, which differs). Per op the median over rounds. Prints the table
(new/old of µs per call, allocating and with out=); ``--out`` writes host-overhead-trees.json there.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SMOKE = "needs two source trees (e.g. a git archive of 089fb2e); its run is recorded in " \
        "benchmarks/results/runs/2026-12-05-host-overhead-pocl/"

CHILD = r'''
import json, os, sys, time
import numpy as np
import isthmus
from isthmus import ops
backend, kind, calls, reps, clock, mode = sys.argv[1:3] + [int(sys.argv[3]), int(sys.argv[4])] + sys.argv[5:7]
clock = {"wall": time.perf_counter, "thread": time.thread_time}[clock]
dev = next(d for d in isthmus.devices() if d.backend == backend and (d.kind == kind or backend == "cuda"))
rng = np.random.default_rng(0)
v = lambda *s: dev.asarray(rng.random(s).astype(np.float32))
x, y, m, a, b = v(1024), v(1024), v(8, 32), v(16, 16), v(16, 16)
so, mo, to, go = ops.sum(x), ops.softmax(m), ops.transpose(m), ops.gemm(a, b)
if mode == "nolaunch":  # the op layer alone: everything up to the device's launch (allocation included)
    dev.launch = lambda kernel, g, loc, args: None
cases = {
    "axpy": (lambda: ops.axpy(2.0, x, y), None),
    "scale": (lambda: ops.scale(2.0, x), lambda: ops.scale(2.0, x, out=y)),
    "softmax": (lambda: ops.softmax(m), lambda: ops.softmax(m, out=mo)),
    "transpose": (lambda: ops.transpose(m), lambda: ops.transpose(m, out=to)),
    "gemm": (lambda: ops.gemm(a, b), lambda: ops.gemm(a, b, go)),
    "sum": (lambda: ops.sum(x), lambda: ops.sum(x, out=so)),
    "max": (lambda: ops.max(x), lambda: ops.max(x, out=so)),
}
def per_call(fn):
    for _ in range(200):
        fn()
    dev.synchronize()
    t = clock()
    for _ in range(calls):
        fn()
    t = clock() - t
    dev.synchronize()
    return t / calls * 1e6
rows = {}
for _ in range(reps):  # the cases alternate within the process too
    for op, (alloc, into) in cases.items():
        rows.setdefault(op, {}).setdefault("us", []).append(per_call(alloc))
        if into is not None:
            rows[op].setdefault("out_us", []).append(per_call(into))
print(json.dumps({"id": dev.id, "name": dev.name,
                  "rows": {op: {k: min(v) for k, v in r.items()} for op, r in rows.items()}}))
'''


def one(tree: str, backend: str, kind: str, cache: str, calls: int, reps: int, clock: str, mode: str) -> dict:
    site = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p and not p.endswith("/python")]
    env = dict(os.environ, PYTHONPATH=":".join([os.path.join(tree, "python"), *site]),
               ISTHMUS_KERNEL_DIR=os.path.join(tree, "opencl"), ISTHMUS_CACHE_DIR=cache,
               ISTHMUS_TUNING_DB=os.path.join(cache, "tuning.sqlite"))
    r = subprocess.run([sys.executable, "-c", CHILD, backend, kind, str(calls), str(reps), clock, mode],
                       env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise SystemExit(f"{tree} {backend}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--backend", nargs="+", default=["opencl"])
    p.add_argument("--kind", default="gpu", help="the OpenCL device kind (PoCL: cpu)")
    p.add_argument("--rounds", type=int, default=3, help="processes per tree and backend")
    p.add_argument("--reps", type=int, default=3, help="timings per case in a process (the least is kept)")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--clock", choices=("wall", "thread"), default="wall",
                   help="wall: perf_counter (a GPU); thread: the calling thread's CPU time (PoCL, whose "
                        "kernels run on the same cores in other threads)")
    p.add_argument("--mode", choices=("full", "nolaunch"), default="full",
                   help="nolaunch: Device.launch replaced by a no-op (the op layer alone)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    old, new = os.path.abspath(a.old), os.path.abspath(a.new)
    caches = {t: tempfile.mkdtemp(prefix=f"overhead-{i}-") for i, t in enumerate((old, new))}
    runs: dict = {}
    for backend in a.backend:
        for i in range(a.rounds):
            for tree in ((new, old) if i % 2 == 0 else (old, new)):
                res = one(tree, backend, a.kind, caches[tree], a.calls, a.reps, a.clock, a.mode)
                runs.setdefault((backend, tree), []).append(res)
                print(f"{backend} {'new' if tree == new else 'old'} round {i}: {res['id']} {res['name']} "
                      f"{json.dumps(res['rows'])}", flush=True)  # (kept if a time limit stops the run)
    table = []
    for backend in a.backend:
        ops = list(runs[(backend, new)][0]["rows"])
        for op in ops:
            line = {"backend": backend, "op": op}
            for k in ("us", "out_us"):
                vals = {t: [r["rows"][op][k] for r in runs[(backend, t)] if k in r["rows"][op]] for t in (old, new)}
                if vals[old] and vals[new]:
                    line[f"old_{k}"], line[f"new_{k}"] = statistics.median(vals[old]), statistics.median(vals[new])
                    line[f"ratio_{k}"] = line[f"new_{k}"] / line[f"old_{k}"]
            table.append(line)
    print(f"{'backend':7s} {'op':10s} {'old µs':>8s} {'new µs':>8s} {'new/old':>8s} | {'out= old':>8s} {'new':>8s} "
          f"{'new/old':>8s}")
    for t in table:
        def cell(k):
            if f"ratio_{k}" not in t:
                return f"{'-':>8s} {'-':>8s} {'-':>8s}"
            return f"{t[f'old_{k}']:8.2f} {t[f'new_{k}']:8.2f} {t[f'ratio_{k}']:8.3f}"
        print(f"{t['backend']:7s} {t['op']:10s} {cell('us')} | {cell('out_us')}")
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        raw = {f"{b} {'new' if t == new else 'old'}": v for (b, t), v in runs.items()}
        with open(os.path.join(a.out, "host-overhead-trees.json"), "w") as f:
            json.dump({"old": old, "new": new, "rounds": a.rounds, "clock": a.clock, "mode": a.mode, "calls": a.calls, "table": table, "runs": raw},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
