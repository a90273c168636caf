"""Host time per library call (isthmus.bench.overhead: tiny problems, the library call allocating its
result, with out=, and the direct CuPy/PyOpenCL call of the same launches) at two commits, on the
GPU machine's CUDA device and NVIDIA OpenCL device (issue 25: no op more than 3% slower than at 089fb2e).

    python compare.py OLD_TREE NEW_TREE OUT_DIR [ROUNDS]

Each (tree, device) runs in a process of its own (PYTHONPATH and ISTHMUS_KERNEL_DIR at that tree,
a program cache per tree), ROUNDS times in alternating order (new, old, old, new, ...), so that drift
touches both alike; per op the median over rounds of each figure. Writes OUT_DIR/host-overhead.json and
prints the table: the ratio is new / old of isthmus µs per call (and with out=), and of the direct
call as a control (same launches: it should stay near 1.00)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, os, sys
import isthmus
from isthmus import bench
dev = next(d for d in isthmus.devices() if d.backend == sys.argv[1] and d.kind == os.environ.get("KIND", "gpu"))
print(json.dumps({"id": dev.id, "name": dev.name, "rows": bench.overhead(dev, calls=int(os.environ.get("CALLS", 2000)))}))
'''


def one(tree: str, backend: str, cache: str) -> dict:
    site = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p and not p.endswith("/python")]
    env = dict(os.environ, PYTHONPATH=":".join([os.path.join(tree, "python"), *site]),
               ISTHMUS_KERNEL_DIR=os.path.join(tree, "opencl"), ISTHMUS_CACHE_DIR=cache,
               ISTHMUS_TUNING_DB=os.path.join(cache, "tuning.sqlite"))
    r = subprocess.run([sys.executable, "-c", CHILD, backend], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise SystemExit(f"{tree} {backend}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    old, new, out = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    os.makedirs(out, exist_ok=True)
    caches = {t: tempfile.mkdtemp(prefix=f"overhead-{i}-") for i, t in enumerate((old, new))}
    runs: dict = {}
    backends = os.environ.get("BACKENDS", "cuda opencl").split()
    for backend in backends:
        for i in range(rounds):
            for tree in ((new, old) if i % 2 == 0 else (old, new)):
                res = one(tree, backend, caches[tree])
                runs.setdefault((backend, tree), []).append(res)
                print(f"{backend} {'new' if tree == new else 'old'} round {i}: {res['id']} {res['name']}", flush=True)
    table = []
    for backend in backends:
        per = {}
        for tree in (old, new):
            for res in runs[(backend, tree)]:
                for row in res["rows"]:
                    for k in ("isthmus_us", "isthmus_out_us", "direct_us"):
                        if k in row:
                            per.setdefault((row["op"], tree, k), []).append(row[k])
        ops = sorted({op for op, _, _ in per})
        for op in ops:
            med = {(t, k): statistics.median(v) for (o, t, k), v in per.items() if o == op}
            line = {"backend": backend, "op": op}
            for k in ("isthmus_us", "isthmus_out_us", "direct_us"):
                if (old, k) in med and (new, k) in med:
                    line[f"old_{k}"], line[f"new_{k}"] = med[(old, k)], med[(new, k)]
                    line[f"ratio_{k}"] = med[(new, k)] / med[(old, k)]
            table.append(line)
    raw = {f"{b} {'new' if t == new else 'old'}": v for (b, t), v in runs.items()}
    with open(os.path.join(out, "host-overhead.json"), "w") as f:
        json.dump({"old": old, "new": new, "rounds": rounds, "table": table, "runs": raw}, f, indent=1)
    print(f"{'device':7s} {'op':22s} {'old µs':>8s} {'new µs':>8s} {'new/old':>8s} | {'out= old':>8s} {'new':>8s} "
          f"{'new/old':>8s} | {'direct old':>10s} {'new':>8s} {'new/old':>8s}")
    for t in table:
        def cell(k):
            if f"ratio_{k}" not in t:
                return f"{'-':>8s} {'-':>8s} {'-':>8s}"
            return f"{t[f'old_{k}']:8.2f} {t[f'new_{k}']:8.2f} {t[f'ratio_{k}']:8.3f}"
        print(f"{t['backend']:7s} {t['op']:22s} {cell('isthmus_us')} | {cell('isthmus_out_us')} | {cell('direct_us')}")


if __name__ == "__main__":
    main()
