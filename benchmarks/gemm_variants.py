"""gemm's variants forced at skinny shapes (x @ W.T, batch 1..64 rows) and a square: the rule's
choice next to tiled, split-K and rows (GEMV-like) configs around it, to see where the rule stands.

    python -m benchmarks gemm_variants --device cuda:0 [--out benchmarks/results/latest]
    python -m benchmarks gemm_variants --device opencl:0 --quick         # PoCL smoke test

Each config is forced (the tuner's way), checked against NumPy on the first call, and timed with
device events (``isthmus.measure``, median of repeats). Prints a markdown table; ``--out`` writes
it with its JSON twin (``gemm_variants-<backend>-<device>[-<tag>]``).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure
from isthmus.ops.resolve import forced
from isthmus.ops.specs import gemm as G
from isthmus.dtypes import lookup
from isthmus.measure import device_ms

SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (1, 11008, 4096), (16, 11008, 4096),
          (64, 11008, 4096), (4096, 4096, 4096)]  # (m, n, k): x @ W.T for m <= 64, A @ B for the square
SKINNY = [  # (TM, TN, WPTM, WPTN, TK, KS)
    (16, 32, 2, 4, 16, 8), (16, 64, 2, 4, 16, 8), (32, 64, 4, 4, 16, 4), (32, 64, 4, 4, 16, 8),
    (64, 64, 4, 4, 16, 2), (64, 64, 4, 4, 16, 4), (64, 64, 4, 4, 16, 8), (64, 64, 8, 8, 16, 4),
    (64, 64, 8, 8, 16, 8), (64, 128, 8, 8, 16, 4), (64, 128, 4, 8, 16, 4), (64, 128, 4, 8, 16, 8),
]
SQUARE = [(128, 128, 8, 8, 16, 1), (128, 128, 8, 8, 8, 1), (128, 64, 8, 4, 16, 1), (128, 64, 8, 4, 8, 1),
          (64, 128, 4, 8, 16, 1), (64, 64, 4, 4, 16, 1)]
MID = [(32, 32, 4, 4, 16, 1), (32, 32, 2, 2, 16, 1), (32, 64, 4, 4, 16, 1), (64, 64, 4, 4, 16, 1),
       (64, 64, 8, 8, 16, 1), (64, 64, 4, 4, 16, 2), (128, 128, 8, 8, 16, 2), (128, 128, 8, 8, 16, 4)]
ROWS = [(rn, rw) for rn in (1, 2, 4) for rw in (4, 8)]  # (RN, RW); RM: the rows, up to 16 a pass


# --quick (the suite's smoke test, 3x96x40): the rule, the config of issue 26 item 7 (wrong on PoCL 5.0
# before gemm.cl's first barrier became unconditional), the element-wise-load config, one rows config.
# The whole list took 63-70 s on the GPU machine's PoCL 5.0 in the GPU pass (20 builds); every value of
# every tunable is checked at odd shapes by tests/ops/test_ops_config_sweep.py
QUICK = ("rule", "TM16 TN64 W2x4 TK16 KS8", "TM16 TN32 W2x4 TK16 KS8 VLD0", "rows RM4 RN1 RW8")


def _candidates(base: dict, rule: dict, m: int) -> list[tuple[str, dict]]:
    tiled = SKINNY if m <= 64 else MID if m < 2048 else SQUARE
    out = [("rule", rule)] + [(f"TM{tm} TN{tn} W{wm}x{wn} TK{tk} KS{ks}",
                               {**base, "VARIANT": 1 if ks > 1 else 0, "TM": tm, "TN": tn, "WPTM": wm,
                                "WPTN": wn, "TK": tk, "KS": ks if ks > 1 else base["KS"]})
                              for tm, tn, wm, wn, tk, ks in tiled]
    out += [(f"{name} VLD0", {**p, "VLD": 0}) for name, p in out[1:2]]  # element-wise loads, for comparison
    if m <= 16:
        rm = min(16, 1 << (m - 1).bit_length())
        out += [(f"rows RM{rm} RN{rn} RW{rw}", {**base, "VARIANT": 3, "RM": rm, "RN": rn, "RW": rw})
                for rn, rw in ROWS if rm * rn <= 32]
    return out


def run(dev, shapes, quick: bool = False) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for m, n, k in shapes:
        tb = m <= 64
        fam = G.family_for(False, tb)
        base = {t.name: t.default for t in fam.tunables}
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
        ref = x.astype(np.float64) @ (w.astype(np.float64).T if tb else w.astype(np.float64))
        dx, dw, dc = dev.asarray(x), dev.asarray(w), dev.empty((m, n), np.float32)
        rule = fam.defaults(dev, {"m": m, "n": n, "k": k})
        for name, p in _candidates(base, rule, m):
            if quick and name not in QUICK:
                continue
            if not fam.is_valid(p, dev, {"m": m, "n": n, "k": k}, lookup("float32")):  # (the spec rules it out here)
                print(f"{m}x{n}x{k:<10} {name:>36} not valid on {dev.id}: skipped", flush=True)
                continue
            with forced(fam, p):
                isthmus.ops.gemm(dx, dw, dc, trans_b=tb)
                got = dc.to_numpy()
                err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                ms = device_ms(dev, lambda: isthmus.ops.gemm(dx, dw, dc, trans_b=tb), repeat=10, warmup=2, batch=5)
            row = {"shape": f"{m}x{n}x{k}", "config": name, "params": p, "ms": ms,
                   "TFLOPs": 2 * m * n * k / ms / 1e9, "error": err}
            rows.append(row)
            print(f"{row['shape']:>16} {name:>36} {ms:8.4f} ms {row['TFLOPs']:6.2f} TFLOP/s err {err:.1e}", flush=True)
    return rows


SMOKE = ["--quick", "--out", "{out}"]  # tests/benchmarks: one small shape, the configs of QUICK


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None)
    p.add_argument("--out", default=None, help="folder for gemm_variants-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--shapes", default=None, help="MxNxK,... (default: the list above)")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--quick", action="store_true", help="one small shape, four configs (a smoke test)")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    rows = run(dev, [(3, 96, 40)] if args.quick else shapes, quick=args.quick)
    report = measure.Report("gemm_variants", f"gemm variants at skinny shapes (x @ W.T) and 4096^3 (float32) on "
                            f"{dev.name} ({dev.backend})", dev, data={"rows": rows})
    report.add_table(["shape", "config", "ms", "TFLOP/s", "error"],
                     [[r["shape"], r["config"], f"{r['ms']:.4f}", f"{r['TFLOPs']:.2f}", f"{r['error']:.1e}"]
                      for r in rows])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0 if all(r["error"] < 1e-4 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
