"""`isthmus bench`'s host-overhead table (bench.overhead: tiny problems, the library call allocating its
result, with out=, and the direct PyOpenCL call of the same launches; wall clock, median of alternating
rounds) for the 7 ops 089fb2e has, at several source trees, each in a process of its own per round,
rounds in alternating order. Each tree measures with its own bench harness (089fb2e's calls the spec's
sample lambdas; main's binds the sample arguments at every call; the branch's binds them once).

    python bench_table.py OUT.json LABEL=TREE [LABEL=TREE ...] [--rounds 2] [--calls 2000]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, sys
import isthmus
try:
    from isthmus.cli import bench
    from isthmus.ops.registry import OPS
    kw = {"specs": [OPS[n] for n in ("axpy", "scale", "softmax", "transpose", "gemm", "sum", "max")]}
except ImportError:  # 089fb2e: isthmus.bench, its 7 ops
    from isthmus import bench
    kw = {}
dev = isthmus.device("opencl:0")
print(json.dumps(bench.overhead(dev, calls=int(sys.argv[1]), rounds=5, **kw)))
'''


def main() -> None:
    args = [a for a in sys.argv[2:] if "=" in a]
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    calls = sys.argv[sys.argv.index("--calls") + 1] if "--calls" in sys.argv else "2000"
    trees = dict(a.split("=", 1) for a in args)
    runs: dict = {label: [] for label in trees}
    for i in range(rounds):
        for label, tree in (trees.items() if i % 2 == 0 else reversed(list(trees.items()))):
            cache = tempfile.mkdtemp(prefix="bench-table-")
            site = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p and not p.endswith("/python")]
            env = dict(os.environ, PYTHONPATH=":".join([os.path.join(tree, "python"), *site]),
                       ISTHMUS_KERNEL_DIR=os.path.join(tree, "opencl"), ISTHMUS_CACHE_DIR=cache,
                       ISTHMUS_TUNING_DB=os.path.join(cache, "tuning.sqlite"))
            r = subprocess.run([sys.executable, "-c", CHILD, calls], env=env, capture_output=True, text=True, timeout=900)
            if r.returncode:
                raise SystemExit(f"{label}: {r.stderr[-2000:]}")
            runs[label].append(json.loads(r.stdout.strip().splitlines()[-1]))
            print(f"round {i} {label}", flush=True)
    table = {}
    for label, rs in runs.items():
        for row in (x for res in rs for x in res):
            for k in ("isthmus_us", "isthmus_out_us", "direct_us"):
                if k in row:
                    table.setdefault(row["op"], {}).setdefault(label, {}).setdefault(k, []).append(row[k])
    med = {op: {label: {k: statistics.median(v) for k, v in d.items()} for label, d in per.items()}
           for op, per in table.items()}
    with open(sys.argv[1], "w") as f:
        json.dump({"trees": trees, "rounds": rounds, "calls": int(calls), "median": med, "runs": runs}, f, indent=1)
    labels = list(trees)
    print(f"{'op':10s} " + " ".join(f"{l + ' ' + k:>22s}" for k in ("alloc", "out=", "direct") for l in labels))
    for op, per in med.items():
        cells = []
        for k in ("isthmus_us", "isthmus_out_us", "direct_us"):
            cells += [f"{per[l][k]:22.2f}" if k in per.get(l, {}) else f"{'-':>22s}" for l in labels]
        print(f"{op:10s} " + " ".join(cells))


if __name__ == "__main__":
    main()
