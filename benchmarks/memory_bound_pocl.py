"""Memory-bound ops on a CPU OpenCL device (PoCL) next to NumPy, at a few sizes, in one run
(#13: with shipped configs and defaults only, every memory-bound op at least as fast as NumPy).

    python -m benchmarks memory_bound_pocl [--device opencl:0] [--out benchmarks/results/latest]
    python -m benchmarks memory_bound_pocl --quick        # smoke test: one small case per op

NumPy references: softmax ``exp(x - max) / sum``, transpose ``np.ascontiguousarray(x.T)``,
``x.sum()``, ``x.max()``, axpy ``y += a * x`` (``np.add(y, a * x, out=y)``), scale
``np.multiply(x, a, out=z)``. Every call is timed the same way (wall clock, ``reps`` calls then a
wait for the device, median of rounds); isthmus and NumPy alternate round by round so that the
machine's load hits both, and which goes first alternates too. GB/s counts each input read once and each output written once.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import knobs, measure

SOFTMAX = [(100000, 16), (16384, 128), (4095, 257), (256, 32000), (64, 128256)]
TRANSPOSE = [(512, 512), (2048, 2048), (3086, 1697)]
VECTOR = [1 << 20, 1 << 22, 1 << 24]
SMOKE = ["--quick", "--out", "{out}"]  # tests/benchmarks: one small case per op


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _time(fn, sync, reps: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process: every thread, PoCL's workers too) per call."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t0) / reps, (time.process_time() - c0) / reps


def pair(ours, peer, sync, rounds: int, budget: float) -> dict:
    """Both sides in alternating rounds: the median and the least wall time per call, and the median
    CPU time per call. On a machine other work shares, the wall clock says how long a call took
    under that load; the CPU time says what the call cost, whatever the load (on a quiet machine
    with as many free cores as PoCL has threads, isthmus's wall time is at most its CPU time)."""
    ours(), sync(), peer()  # warm-up (compiles, caches)
    one = max(_time(ours, sync, 1)[0], _time(peer, lambda: None, 1)[0], 1e-6)
    reps = max(1, min(200, int(budget / rounds / one)))
    a, b = [], []
    for i in range(rounds):  # who goes first alternates: the side after the other finds its data out of the cache
        if i % 2:
            b.append(_time(peer, lambda: None, reps))
        a.append(_time(ours, sync, reps))
        if not i % 2:
            b.append(_time(peer, lambda: None, reps))
    return {side: {"wall": statistics.median(t[0] for t in ts), "least": min(t[0] for t in ts),
                   "cpu": statistics.median(t[1] for t in ts)} for side, ts in (("isthmus", a), ("numpy", b))}


def cases(dev, rng, quick: bool = False):
    softmax, transpose, vector = ([(64, 33)], [(40, 24)], [1 << 12]) if quick else (SOFTMAX, TRANSPOSE, VECTOR)
    for rows, cols in softmax:
        x = rng.standard_normal((rows, cols), dtype=np.float32)
        dx, dy = dev.asarray(x), dev.empty((rows, cols), np.float32)
        yield ("softmax", f"{rows}x{cols}", 2 * x.nbytes, lambda dx=dx, dy=dy: isthmus.ops.softmax(dx, out=dy),
               lambda x=x: _np_softmax(x), lambda dy=dy: dy.to_numpy(), lambda x=x: _np_softmax(x))
    for rows, cols in transpose:
        x = rng.standard_normal((rows, cols), dtype=np.float32)
        dx, dy = dev.asarray(x), dev.empty((cols, rows), np.float32)
        yield ("transpose", f"{rows}x{cols}", 2 * x.nbytes, lambda dx=dx, dy=dy: isthmus.ops.transpose(dx, out=dy),
               lambda x=x: np.ascontiguousarray(x.T), lambda dy=dy: dy.to_numpy(), lambda x=x: x.T)
    for n in vector:
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        dx, dy, ds = dev.asarray(x), dev.asarray(y), dev.empty(1, np.float32)
        for op in ("sum", "max"):
            yield (op, f"n={n}", x.nbytes, lambda op=op, dx=dx, ds=ds: getattr(isthmus.ops, op)(dx, out=ds),
                   lambda op=op, x=x: getattr(x, op)(), lambda ds=ds: ds.to_numpy()[0],
                   lambda op=op, x=x: getattr(x.astype(np.float64), op)())
        hy = y.copy()
        # a = 0: the same traffic as any axpy, and y stays the same over repeated calls
        yield ("axpy", f"n={n}", 3 * x.nbytes, lambda dx=dx, dy=dy: isthmus.ops.axpy(0.0, dx, dy),
               lambda x=x, hy=hy: np.add(hy, 0.0 * x, out=hy), lambda dy=dy: dy.to_numpy(), lambda y=y: y)
        dz, hz = dev.empty(n, np.float32), np.empty(n, np.float32)
        yield ("scale", f"n={n}", 2 * x.nbytes, lambda dx=dx, dz=dz: isthmus.ops.scale(2.0, dx, out=dz),
               lambda x=x, hz=hz: np.multiply(x, 2.0, out=hz), lambda dz=dz: dz.to_numpy(), lambda x=x: 2.0 * x)


def _user_configs() -> int:
    """How many tuned configs the user's database holds (0: only what ships is measured)."""
    from isthmus.tune import db
    from isthmus.tune.exchange import export

    return len(export(db.user())["entries"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per case and side (about)")
    p.add_argument("--quick", action="store_true", help="one small case per op (a smoke test, not a measurement)")
    p.add_argument("--out", default=None, help="folder for memory_bound_pocl-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    rng = np.random.default_rng(0)
    rows = []
    for op, size, nbytes, ours, peer, got, want in cases(dev, rng, args.quick):
        t = pair(ours, peer, dev.synchronize, 2 if args.quick else args.rounds, 0.01 if args.quick else args.budget)
        ref = np.asarray(want(), np.float64)
        err = float(np.max(np.abs(np.asarray(got(), np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))
        ours_t, peer_t = t["isthmus"], t["numpy"]
        rows.append({"op": op, "size": size, "isthmus_GBs": nbytes / ours_t["wall"] / 1e9,
                     "numpy_GBs": nbytes / peer_t["wall"] / 1e9, "ratio": peer_t["wall"] / ours_t["wall"],
                     "least_ratio": peer_t["least"] / ours_t["least"],
                     "cpu_ratio": peer_t["cpu"] / ours_t["cpu"] if ours_t["cpu"] > 0 else None,
                     "seconds": t, "error": err})
        print(f"{op} {size}: {rows[-1]['ratio']:.2f}x NumPy, error {err:.1e}", flush=True)
    report = measure.Report("memory_bound_pocl", f"Memory-bound ops on {dev.name} ({dev.backend}) vs NumPy", dev,
                            data={"rows": rows},
                            notes=[f"NumPy {np.__version__}; isthmus configs: shipped database and defaults, and the "
                                   f"{_user_configs()} configs of the user's tuning database ({knobs.tuning_db()})"])
    report.add_table(["op", "size", "isthmus GB/s", "NumPy GB/s", "isthmus / NumPy", "best rounds", "CPU time",
                      "max rel. error"],
                     [[r["op"], r["size"], f"{r['isthmus_GBs']:.3g}", f"{r['numpy_GBs']:.3g}", f"{r['ratio']:.2f}x",
                       f"{r['least_ratio']:.2f}x", f"{r['cpu_ratio']:.2f}x" if r["cpu_ratio"] else "-",
                       f"{r['error']:.1e}"] for r in rows])
    report.add_text("isthmus / NumPy: NumPy's median wall time per call over isthmus's (above 1: isthmus is "
                    "faster); best rounds: the same of each side's fastest round; CPU time: NumPy's process CPU "
                    "time per call over isthmus's (all threads: what a call costs whatever else runs).")
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0 if all(r["error"] < 1e-4 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
