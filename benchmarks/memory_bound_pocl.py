"""Memory-bound ops on a CPU OpenCL device (PoCL) next to NumPy, at a few sizes, in one run
(#13: with shipped configs and defaults only, every memory-bound op at least as fast as NumPy).

    python -m benchmarks memory_bound_pocl [--device opencl:0] [--out benchmarks/results]
    python -m benchmarks memory_bound_pocl --quick        # smoke test: one small case per op

NumPy references: softmax ``exp(x - max) / sum``, transpose ``np.ascontiguousarray(x.T)``,
``x.sum()``, ``x.max()``, axpy ``y += a * x`` (``np.add(y, a * x, out=y)``), scale
``np.multiply(x, a, out=z)``. Every call is timed the same way (wall clock, ``reps`` calls then a
wait for the device, median of rounds); isthmus and NumPy alternate round by round so that the
machine's load hits both. GB/s counts each input read once and each output written once.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import isthmus
from isthmus import knobs, measure

SOFTMAX = [(100000, 16), (16384, 128), (4095, 257), (256, 32000), (64, 128256)]
TRANSPOSE = [(512, 512), (2048, 2048), (3086, 1697)]
VECTOR = [1 << 20, 1 << 22, 1 << 24]
SMOKE = ["--quick", "--out", "{out}"]  # tests/benchmarks: one small case per op


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _time(fn, sync, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t0) / reps


def pair(ours, peer, sync, rounds: int, budget: float) -> tuple[float, float]:
    ours(), sync(), peer()  # warm-up (compiles, caches)
    one = max(_time(ours, sync, 1), _time(peer, lambda: None, 1), 1e-6)
    reps = max(1, min(200, int(budget / rounds / one)))
    a, b = [], []
    for _ in range(rounds):
        a.append(_time(ours, sync, reps))
        b.append(_time(peer, lambda: None, reps))
    return statistics.median(a), statistics.median(b)


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

    return len(db.user().export()["entries"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per case and side (about)")
    p.add_argument("--quick", action="store_true", help="one small case per op (a smoke test, not a measurement)")
    p.add_argument("--out", default=None, help="folder for memory_bound_pocl-<backend>-<device>.md/.json")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    rng = np.random.default_rng(0)
    rows = []
    for op, size, nbytes, ours, peer, got, want in cases(dev, rng, args.quick):
        t_ours, t_peer = pair(ours, peer, dev.synchronize, 2 if args.quick else args.rounds,
                              0.01 if args.quick else args.budget)
        ref = np.asarray(want(), np.float64)
        err = float(np.max(np.abs(np.asarray(got(), np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))
        rows.append({"op": op, "size": size, "isthmus_GBs": nbytes / t_ours / 1e9, "numpy_GBs": nbytes / t_peer / 1e9,
                     "ratio": t_peer / t_ours, "error": err})
        print(f"{op} {size}: {t_peer / t_ours:.2f}x NumPy, error {err:.1e}", flush=True)
    report = measure.Report("memory_bound_pocl", f"Memory-bound ops on {dev.name} ({dev.backend}) vs NumPy", dev,
                            data={"rows": rows},
                            notes=[f"NumPy {np.__version__}; isthmus configs: shipped database and defaults, and the "
                                   f"{_user_configs()} configs of the user's tuning database ({knobs.tuning_db()})"])
    report.add_table(["op", "size", "isthmus GB/s", "NumPy GB/s", "isthmus / NumPy", "max rel. error"],
                     [[r["op"], r["size"], f"{r['isthmus_GBs']:.3g}", f"{r['numpy_GBs']:.3g}", f"{r['ratio']:.2f}x",
                       f"{r['error']:.1e}"] for r in rows])
    print(report.markdown())
    if args.out:
        print(f"wrote {report.write(args.out, args.tag)}.md/.json")
    return 0 if all(r["error"] < 1e-4 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
