"""A fused 4-operation elementwise expression vs the same chain of separate kernels, and (on CUDA)
vs CuPy's elementwise chain and cupy.fuse, for 1K, 1M and 100M elements (100M on GPUs only).

    python -m benchmarks fusion [--device ID] [--out DIR] [--sizes 1000,1000000]

Expression: out = a * x + b * tanh(y) (float32; 2 multiplies, 1 add, 1 tanh). The unfused chain is
four isthmus kernels (t = a*x; u = tanh(y); u = b*u; out = t + u) into preallocated temporaries.
Each path is timed (``isthmus.measure``, interleaved rounds) as wall time per iteration (host +
device, synchronized at the end of a batch) and as device time per iteration (events around the
batch); results are checked against NumPy.
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = ["--sizes", "1000", "--budget", "0.05", "--out", "{out}"]

EXPR = "out = a * x + b * tanh(y)"
A, B = 1.5, -0.75


def _time(dev, fn, budget_s: float, rounds: int = 5) -> tuple[float, float]:
    """(median wall us per iteration, median device us per iteration)."""
    one_ms = measure.host_ms(fn, repeat=1, warmup=1, sync=dev.synchronize)
    iters = int(max(3, min(5000, budget_s * 1e3 / rounds / max(one_ms, 1e-3))))
    t = measure.interleaved({"wall": measure.round_of(measure.WallClock(dev.synchronize), fn, iters),
                             "device": measure.round_of(dev, fn, iters)}, rounds)
    return t["wall"].median * 1e3, t["device"].median * 1e3


def run(dev, sizes: list[int], budget_s: float) -> tuple[list[dict], list[str]]:
    import isthmus

    fused = dev.fuse(EXPR)
    mul, tanh, add = dev.fuse("t = a * x"), dev.fuse("t = tanh(x)"), dev.fuse("out = x + y")
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        xh = rng.standard_normal(n).astype(np.float32)
        yh = rng.standard_normal(n).astype(np.float32)
        ref = fused.reference(A, xh, B, yh)
        x, y = dev.asarray(xh), dev.asarray(yh)
        out, t, u = dev.empty(n, np.float32), dev.empty(n, np.float32), dev.empty(n, np.float32)
        plan = fused.prepare(A, x, B, y, out=out)

        def unfused():
            mul(A, x, out=t)
            tanh(y, out=u)
            mul(B, u, out=u)
            add(t, u, out=out)

        paths = [("isthmus fused call", lambda: fused(A, x, B, y, out=out), out),
                 ("isthmus fused Plan.launch", plan.launch, out),
                 ("isthmus unfused (4 kernels)", unfused, out)]
        if dev.backend == "cuda":
            paths += _cupy_paths(dev, x, y)
        base = None
        for name, fn, result in paths:
            wall, device = _time(dev, fn, budget_s)
            got = result.to_numpy() if isinstance(result, isthmus.Buffer) else result().get()
            err = float(np.max(np.abs(got - ref))) if n else 0.0
            row = {"elements": n, "path": name, "wall_us": wall, "device_us": device, "max_abs_err": err}
            if name == "isthmus unfused (4 kernels)":
                base = row
            rows.append(row)
        for r in rows:
            if r["elements"] == n:
                r["x_faster_than_unfused"] = base["wall_us"] / r["wall_us"]
        for b in (x, y, out, t, u):
            b.close()
        plan.close()
    notes = [f"expression {EXPR!r}, float32, a={A}, b={B}; wall = host+device per iteration (batch synchronized), "
             "device = events around the batch; x_faster_than_unfused = unfused wall / path wall"]
    at_1m = [r for r in rows if r["elements"] == 1_000_000 and r["path"] == "isthmus fused call"]
    if at_1m and dev.kind == "gpu":
        s = at_1m[0]["x_faster_than_unfused"]
        notes.append(f"target (GPU): fused >= 3x unfused at 1M: {s:.2f}x ({'met' if s >= 3 else 'NOT met'})")
    return rows, notes


def _cupy_paths(dev, x, y):
    import cupy

    xc, yc = dev._cupy_view(x), dev._cupy_view(y)
    state = {}

    def chain():
        with dev.stream:
            state["chain"] = A * xc + B * cupy.tanh(yc)

    @cupy.fuse()
    def fused_fn(a, x, b, y):
        return a * x + b * cupy.tanh(y)

    a32, b32 = np.float32(A), np.float32(B)

    def cfuse():
        with dev.stream:
            state["fuse"] = fused_fn(a32, xc, b32, yc)

    return [("CuPy elementwise chain", chain, lambda: state["chain"]),
            ("cupy.fuse", cfuse, lambda: state["fuse"])]


def main(argv=None) -> int:
    import isthmus

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best available)")
    ap.add_argument("--out", default=None, help="folder for fusion-<backend>-<device>.md/.json")
    _results.add_run_option(ap)
    ap.add_argument("--tag", default="", help="suffix of the result file names")
    ap.add_argument("--sizes", default=None, help="comma-separated element counts (default 1K,1M and 100M on GPUs)")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timing per path and size")
    a = ap.parse_args(argv)
    dev = isthmus.device(a.device)
    sizes = ([int(s) for s in a.sizes.split(",")] if a.sizes else
             [1000, 1_000_000] + ([100_000_000] if dev.kind == "gpu" else []))
    rows, notes = run(dev, sizes, a.budget)
    report = measure.Report("fusion", f"fusion on {dev.id} ({dev.name}, {dev.vendor})", dev, data={"rows": rows},
                            notes=notes)
    report.add_records(rows, ["elements", "path", "wall_us", "device_us", "x_faster_than_unfused", "max_abs_err"])
    print(report.markdown())
    _results.write(report, a.out, a.tag, a.run)
    return 0 if all(r["max_abs_err"] < 1e-4 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
