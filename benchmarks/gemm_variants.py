"""gemm's variants forced at skinny shapes (x @ W.T, batch 1..64 rows): the rule's choice next to a
few tiled and split-K configs around it, to see where the rule stands and what to change.

    python -m benchmarks gemm_variants --device cuda:0 [--out benchmarks/results]
    python -m benchmarks gemm_variants --device opencl:0 --quick         # PoCL smoke test

Each config is forced (the tuner's way), checked against NumPy on the first call, and timed with
device events (``isthmus.measure``, median of repeats). Prints a markdown table; ``--out`` writes
it with its JSON twin (``gemm_variants-<backend>-<device>[-<tag>]``).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

import isthmus
from isthmus import measure
from isthmus.library import gemm as G
from isthmus.library.family import forced
from isthmus.measure import device_ms

SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (16, 11008, 4096)]
CONFIGS = [  # (TM, TN, WPTM, WPTN, TK, KS)
    (16, 32, 2, 4, 16, 1), (16, 64, 2, 4, 16, 1), (16, 32, 2, 4, 16, 2), (16, 32, 2, 4, 16, 4),
    (16, 32, 2, 4, 16, 8), (16, 64, 2, 8, 16, 4), (16, 64, 2, 4, 16, 8), (16, 128, 2, 8, 16, 4),
    (32, 64, 4, 4, 16, 4), (64, 64, 4, 4, 16, 2), (16, 32, 2, 4, 32, 4), (8, 64, 1, 4, 16, 8),
]


def run(dev, shapes, configs) -> list[dict]:
    rng = np.random.default_rng(0)
    fam = G.family_for(False, True)
    base = {t.name: t.default for t in fam.tunables}
    rows = []
    for m, n, k in shapes:
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        ref = x.astype(np.float64) @ w.astype(np.float64).T
        dx, dw, dc = dev.asarray(x), dev.asarray(w), dev.empty((m, n), np.float32)
        rule = fam.defaults(dev, {"m": m, "n": n, "k": k})
        cands = [("rule", rule)] + [(f"TM{tm} TN{tn} W{wm}x{wn} TK{tk} KS{ks}",
                                     {**base, "VARIANT": 1 if ks > 1 else 0, "TM": tm, "TN": tn, "WPTM": wm,
                                      "WPTN": wn, "TK": tk, "KS": ks if ks > 1 else base["KS"]})
                                    for tm, tn, wm, wn, tk, ks in configs]
        for name, p in cands:
            with forced(fam, p):
                isthmus.ops.gemm(dx, dw, dc, trans_b=True)
                got = dc.to_numpy()
                err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                ms = device_ms(dev, lambda: isthmus.ops.gemm(dx, dw, dc, trans_b=True), repeat=10, warmup=2, batch=5)
            row = {"shape": f"{m}x{n}x{k}", "config": name, "params": p, "ms": ms,
                   "TFLOPs": 2 * m * n * k / ms / 1e9, "error": err}
            rows.append(row)
            print(f"{row['shape']:>16} {name:>36} {ms:8.4f} ms {row['TFLOPs']:6.2f} TFLOP/s err {err:.1e}", flush=True)
    return rows


SMOKE = ["--quick", "--out", "{out}"]  # tests/benchmarks: one small shape, the rule and one config


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None)
    p.add_argument("--out", default=None, help="folder for gemm_variants-<backend>-<device>.md/.json")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--quick", action="store_true", help="one small shape, the rule and one config (a smoke test)")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    rows = run(dev, [(3, 96, 40)], CONFIGS[:1]) if args.quick else run(dev, SHAPES, CONFIGS)
    report = measure.Report("gemm_variants", f"gemm variants at skinny shapes (x @ W.T, float32) on {dev.name} "
                            f"({dev.backend})", dev, data={"rows": rows})
    report.add_table(["shape", "config", "ms", "TFLOP/s", "error"],
                     [[r["shape"], r["config"], f"{r['ms']:.4f}", f"{r['TFLOPs']:.2f}", f"{r['error']:.1e}"]
                      for r in rows])
    print(report.markdown())
    if args.out:
        print(f"wrote {report.write(args.out, args.tag)}.md/.json")
    return 0 if all(r["error"] < 1e-4 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
