"""gemm's variants forced at skinny shapes (x @ W.T, batch 1..64 rows) and a square: the rule's
choice next to tiled, split-K and rows (GEMV-like) configs around it, to see where the rule stands.

    python benchmarks/gemm_variants.py --device cuda:0 [--out DIR]

Each config is forced (the tuner's way), checked against NumPy on the first call, and timed with
device events (median of repeats). Prints a markdown table; ``--out`` writes it with a JSON twin.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

import isthmus
from isthmus.library import gemm as G
from isthmus.library.family import forced
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


def run(dev, shapes) -> list[dict]:
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None)
    p.add_argument("--out", default=None)
    p.add_argument("--shapes", default=None, help="MxNxK,... (default: the list above)")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    rows = run(dev, shapes)
    lines = [f"# gemm variants at skinny shapes (x @ W.T) and 4096^3 (float32) on {dev.name} ({dev.backend})", "",
             "| shape | config | ms | TFLOP/s | error |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['shape']} | {r['config']} | {r['ms']:.4f} | {r['TFLOPs']:.2f} | {r['error']:.1e} |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        slug = re.sub(r"[^a-z0-9]+", "-", f"{dev.backend}-{dev.name}".lower()).strip("-") + args.tag
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"gemm_variants-{slug}.json").write_text(json.dumps({"device": dev.info(), "rows": rows}, indent=1))
        (out / f"gemm_variants-{slug}.md").write_text(text)
    return 0 if all(r["error"] < 1e-4 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
