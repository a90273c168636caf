"""Tune every library kernel at several sizes on one device, under a total time budget.

    python -m benchmarks tune_gpu --device cuda:0 --out $OUT          # H200: ~5 minutes
    python -m benchmarks tune_gpu --device opencl:0 --out /tmp/tune --run pocl-configs --seconds 900 \
        --merge-into python/isthmus/tune/bundled/opencl-pocl-x86_64.json                   # PoCL
    POCL_KERNELLIB_NAME=avx2 python -m benchmarks tune_gpu --device opencl:0 --seconds 900 \
        --merge-into python/isthmus/tune/bundled/opencl-pocl-x86-64-avx2.json              # PoCL, AVX2 class

PoCL CPU configs ship per class (SIMD width: tune/lookup.py's x86-64-simd128/256/512), one file
each; a CPU of another name finds its class's configs by architecture, after its own exact ones.
``POCL_KERNELLIB_NAME`` (avx2, avx512, sse41, ...) makes PoCL generate a class's code on any newer
x86-64 machine, naming the device after the class's LLVM CPU (``pthread-haswell-...`` for avx2);
see benchmarks/results/runs/2026-12-04-tune-pocl-avx2-class/.

Writes into --out (<tag>: <backend>-<device>[-<--tag>], as ``isthmus.measure`` names results):
  tune_gpu-<tag>.json / .md   every run: best config, tuned and default time, speedup, statuses,
                              bandwidth or GFLOP/s against the device-to-device copy bandwidth
                              (and cuBLAS SGEMM at the largest gemm size when CuPy is there)
  bundled-<tag>.json          the best configs as an isthmus-tuning document: copy it into
                              python/isthmus/tune/bundled/ to ship it (``isthmus db import`` also takes it)
  tuning-<tag>.sqlite         the tuning database of this run (every evaluation)
--run QUESTION also writes the report into benchmarks/results/runs/<today>-QUESTION/ and latest/
(copy the bundle there too when the run's configs ship).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from benchmarks import _results
from isthmus import measure

SMOKE = ["--quick", "--out", "{out}"]

SIZES = {
    # a problem of each shape class of the sweep (benchmarks/shapes.py): square, narrow rows (bs:
    # attention width and the odd 65521x257), vocabulary-wide rows (bb/e), odd transpose, skinny gemm (tbb, sbb)
    "gpu": {"axpy": [{"n": 1 << 20}, {"n": 1 << 26}],
            "sum": [{"n": 1 << 20}, {"n": 1 << 24}, {"n": 1 << 26}],
            "max": [{"n": 1 << 24}, {"n": 1 << 26}],
            "softmax": [{"rows": 65521, "cols": 257}, {"rows": 262144, "cols": 128}, {"rows": 4096, "cols": 32000},
                        {"rows": 1024, "cols": 128256}, {"rows": 8192, "cols": 8192}],
            "transpose": [{"rows": 4096, "cols": 4096}, {"rows": 12345, "cols": 6789}, {"rows": 8192, "cols": 8192}],
            # squares from 1024 (below 2048 the 2048 bucket's 128x128 tiles leave most SMs idle: CUDA
            # 1024^3 0.50x torch with them, 0.89x tuned); not 512^3 (a class of its own, "sss"), where
            # NVIDIA OpenCL's tuned split-K pick lost to the rule's one launch in the call (0.77x against
            # 1.31x CLBlast: the tuner times the device, and a second launch costs the host ~10 us there)
            "gemm": [{"m": 16, "n": 4096, "k": 4096}, {"m": 64, "n": 11008, "k": 4096}, {"m": 1024, "n": 1024, "k": 1024},
                     {"m": 2048, "n": 2048, "k": 2048}, {"m": 4096, "n": 4096, "k": 4096}]},
    # a problem of each shape class of the sweep (benchmarks/shapes.py, scaled for a CPU): square,
    # narrow rows (bs), vocabulary-wide rows (sb/e, bb/e), skinny gemm (tbb)
    "cpu": {"axpy": [{"n": 1 << 16}, {"n": 1 << 20}],
            "sum": [{"n": 1 << 16}, {"n": 1 << 20}, {"n": 1 << 22}],
            "max": [{"n": 1 << 20}, {"n": 1 << 22}],
            "softmax": [{"rows": 1024, "cols": 1024}, {"rows": 16384, "cols": 128}, {"rows": 64, "cols": 32000},
                        {"rows": 1024, "cols": 16000}],
            "transpose": [{"rows": 1024, "cols": 1024}, {"rows": 3086, "cols": 1697}],
            "gemm": [{"m": 512, "n": 512, "k": 512}, {"m": 16, "n": 1024, "k": 1024}]},
}
WEIGHT = {"gemm": 4, "sum": 1.5, "max": 1}  # share of the time budget (big spaces get more)
BUDGET = {"gemm": 100, "sum": 60, "max": 40, "axpy": 20, "transpose": 21, "softmax": 32}  # evaluations per run


def moved(kernel: str, p: dict, itemsize: int) -> tuple[float, str]:
    """Bytes moved (or flops) of one launch, and the unit of the metric."""
    if kernel == "gemm":
        return 2.0 * p["m"] * p["n"] * p["k"], "GFLOP/s"
    if kernel == "axpy":
        return 3.0 * p["n"] * itemsize, "GB/s"
    if kernel in ("sum", "max"):
        return 1.0 * p["n"] * itemsize, "GB/s"
    return 2.0 * p["rows"] * p["cols"] * itemsize, "GB/s"


def cublas_gflops(dev, n: int) -> float | None:
    if dev.backend != "cuda":
        return None
    try:
        import cupy as cp
    except ImportError:
        return None
    with dev._cp_device, dev.stream:  # on the device's stream, so its events time it
        a = cp.random.standard_normal((n, n), dtype=cp.float32)
        b = cp.random.standard_normal((n, n), dtype=cp.float32)
        ms = measure.device_ms(dev, lambda: cp.matmul(a, b), repeat=10, warmup=3)
    return 2.0 * n ** 3 / ms / 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--out", default=None, help="folder for the report, the bundle and the database (default: a "
                   "temporary folder)")
    p.add_argument("--tag", default="", help="suffix of the result file names (e.g. softmax)")
    _results.add_run_option(p)
    p.add_argument("--quick", action="store_true", help="axpy at one small size for a few seconds (a smoke test)")
    p.add_argument("--seconds", type=float, default=240, help="total tuning time budget (setup comes on top)")
    p.add_argument("--kernels", nargs="*", default=None)
    p.add_argument("--sizes", choices=sorted(SIZES), default=None, help="size preset (default: by device kind)")
    p.add_argument("--problem", action="append", default=None, metavar="K=V,...",
                   help="tune these problems instead of the preset's (repeatable), e.g. rows=65521,cols=257")
    p.add_argument("--evals", type=int, default=None, help="evaluations per run (default: per kernel, BUDGET)")
    p.add_argument("--strategy", default="anneal")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--merge-into", default=None, metavar="FILE.json",
                   help="also merge the new configs into this bundled file (same device and kernel: replaced)")
    args = p.parse_args(argv)
    if args.problem and not args.kernels:
        p.error("--problem names one op's sizes: give the op with --kernels (e.g. --kernels softmax)")
    if args.quick:
        args.kernels, args.seconds = args.kernels or ["axpy"], min(args.seconds, 2.0)

    import isthmus
    from isthmus.tune import db as dbmod
    from isthmus.tune.exchange import export
    from isthmus.tune.runner import Budget, Measure, default_params
    from isthmus.ops.registry import OPS
    from isthmus.dtypes import lookup

    dev = isthmus.device(args.device)
    if args.out is None:
        import tempfile

        args.out = tempfile.mkdtemp(prefix="tune_gpu-")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = measure.result_stem("tune_gpu", dev, args.tag).removeprefix("tune_gpu-")
    store = dbmod.Database(out / f"tuning-{tag}.sqlite")
    preset = SIZES[args.sizes or ("gpu" if dev.kind == "gpu" else "cpu")]
    if args.quick:
        preset = {k: v[:1] for k, v in preset.items()}
    kernels = args.kernels or list(preset)
    if args.problem:
        given = [{k: int(v) for k, v in (kv.split("=") for kv in spec.split(","))} for spec in args.problem]
        preset = {k: given for k in kernels}
    runs = [(k, size) for k in kernels for size in preset[k]]
    # Larger sizes get more time: their evaluations cost more, and they are the numbers that matter.
    weights = [WEIGHT.get(k, 1.0) * (1 + 0.5 * preset[k].index(size)) for k, size in runs]
    previous: dict = {}  # kernel -> best config at the last size: where the next size's search starts
    t_start = time.monotonic()
    print(f"{dev.id}: {dev.name} ({dev.identity()['driver']}); {len(runs)} tuning runs in {args.seconds:.0f} s",
          file=sys.stderr)
    copy_gbs = measure.copy_bandwidth(dev, (1 << 28) if dev.kind == "gpu" else (1 << 24))
    print(f"copy bandwidth {copy_gbs:.1f} GB/s", file=sys.stderr)
    rows = []
    for i, (kernel, size) in enumerate(runs):
        left = args.seconds - (time.monotonic() - t_start)
        seconds = max(3.0, left * weights[i] / sum(weights[i:]))
        fam = OPS[kernel]
        start = None
        if args.strategy == "anneal":
            start = default_params(fam, dev, size, lookup("float32"))
            if kernel in previous and fam.is_valid(previous[kernel], dev, size, lookup("float32")):
                start = previous[kernel]
        try:
            r = isthmus.tune(kernel, device=dev, problem=size, strategy=args.strategy,
                             budget=Budget(args.evals or BUDGET.get(kernel, 40), seconds), seed=args.seed, database=store,
                             measure=Measure(warmup=2, repeat=7, input_sets=3),
                             options={"start": start} if start else None)
        except Exception as exc:  # one kernel failing to tune must not lose the others' results
            print(f"{kernel} {size}: {type(exc).__name__}: {exc}", file=sys.stderr)
            rows.append({"kernel": kernel, "problem": size, "error": f"{type(exc).__name__}: {exc}"})
            continue
        if r.best:
            previous[kernel] = r.best
        amount, unit = moved(kernel, size, 4)
        row = {k: v for k, v in r.to_json().items() if k != "evaluations"}
        row.update({"evaluations": len(r.evaluations), "unit": unit,
                    "tuned": amount / r.best_ms / 1e6 if math.isfinite(r.best_ms) else None,
                    "default_rate": amount / r.default_ms / 1e6 if r.default_ms else None})
        if unit == "GB/s":
            row["of_copy"] = row["tuned"] / copy_gbs if row["tuned"] else None
        rows.append(row)
        print(f"{kernel} {size}: best {dict(r.best)} {r.best_ms:.4g} ms ({row['tuned'] or 0:.1f} {unit}), default "
              f"{r.default_ms or float('nan'):.4g} ms, {r.speedup:.2f}x, {r.by_status}, {r.seconds:.0f} s",
              file=sys.stderr)
    largest = max((r["problem"]["m"] for r in rows if r["kernel"] == "gemm" and "error" not in r), default=None)
    cublas = cublas_gflops(dev, largest) if largest else None
    for r in rows:
        if cublas and r["kernel"] == "gemm" and r.get("problem", {}).get("m") == largest and r.get("tuned"):
            r["of_cublas"] = r["tuned"] / cublas
    doc = {"identity": dev.identity(), "copy_GBps": copy_gbs, "cublas_sgemm_GFLOPs": cublas,
           "cublas_n": largest, "seconds": time.monotonic() - t_start, "strategy": args.strategy, "runs": rows}
    report = report_of(dev, doc)
    _results.write(report, out, args.tag, args.run)
    bundle = export(store)
    if dev.kind == "cpu":  # CPU configs apply to CPUs of a similar core count (tune/lookup.py)
        bundle["cores"] = {dev.name: dev.compute_units}
    (out / f"bundled-{tag}.json").write_text(json.dumps(bundle, indent=1, sort_keys=True) + "\n")
    if args.merge_into:
        from benchmarks.tools.merge_bundled import merge

        merge(Path(args.merge_into), bundle)
    print(report.markdown())
    print(f"wrote {out}/tune_gpu-{tag}.json, .md, bundled-{tag}.json ({len(bundle['entries'])} configs) in "
          f"{doc['seconds']:.0f} s", file=sys.stderr)
    return 0


def report_of(dev, doc: dict):
    d = doc["identity"]
    report = measure.Report("tune_gpu", f"Tuned library kernels on {d['name']} ({d['backend']}, driver {d['driver']})",
                            dev, data=doc, notes=[
                                f"Device-to-device copy: {doc['copy_GBps']:.1f} GB/s."
                                + (f" cuBLAS SGEMM {doc['cublas_n']}^3: {doc['cublas_sgemm_GFLOPs']:.0f} GFLOP/s."
                                   if doc.get("cublas_sgemm_GFLOPs") else "")
                                + f" Strategy {doc['strategy']}, {doc['seconds']:.0f} s in all."])
    rows = []
    for r in doc["runs"]:
        if "error" in r:
            rows.append([r["kernel"], r["problem"], f"error: {r['error']}", "", "", "", "", "", "", ""])
            continue
        vs = f"{r['of_copy']:.0%} of copy" if r.get("of_copy") else (
            f"{r['of_cublas']:.0%} of cuBLAS" if r.get("of_cublas") else "")
        fails = {k: v for k, v in r["by_status"].items() if k != "ok"}
        rows.append([r["kernel"], " ".join(f"{k}={v}" for k, v in r["problem"].items()),
                     f"{r['evaluations']} / {r['space_size']}", " ".join(f"{k}={v}" for k, v in r["best"].items()),
                     f"{r['best_ms']:.4g}", f"{r['default_ms'] or float('nan'):.4g}", f"{r['speedup']:.2f}x",
                     f"{r['tuned'] or 0:.1f} {r['unit']}", vs, fails or ""])
    report.add_table(["kernel", "problem", "evals / space", "best config", "tuned ms", "default ms", "speedup",
                      "tuned rate", "vs copy / cuBLAS", "failures"], rows)
    return report


if __name__ == "__main__":
    sys.exit(main())
