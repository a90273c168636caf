"""Tensor-core gemm (gemm_mma) on a GPU: correctness over layouts, odd sizes, batching, output dtypes
and forced configs, then timing at square sizes next to torch.mm (cuBLAS) in the same process.

    python -m benchmarks gemm_mma_gpu --device cuda:0 --check --sweep --time 4096 8192 --out benchmarks/results
    python -m benchmarks gemm_mma_gpu --device opencl:0 --quick           # smoke test (the portable path)

--device opencl:nvidia picks the first OpenCL device whose vendor is NVIDIA. Correctness: relative
Frobenius error against float64 NumPy (small cases) or torch's float32 product of the same inputs
(timed sizes); outputs are poisoned with NaN first. Timing (``isthmus.measure``): device events
around ``reps`` launches, median of ``rounds``; torch.mm on the same data in the same run, timed
with CUDA events. ``--out DIR`` writes the report (``gemm_mma_gpu-<backend>-<device>.md/.json``);
``--json FILE`` appends the raw results as one JSON line (a log of runs).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback

import ml_dtypes
import numpy as np

import isthmus
from isthmus import measure
from isthmus.library import gemm_mma
from isthmus.library.family import forced

SMOKE = ["--device", "{device}", "--quick", "--out", "{out}"]  # tests/benchmarks: the portable path
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": BF16}
# (batch_a, batch_b, m, n, k, trans_a, trans_b, out f32?, beta)
CASES = [
    (None, None, 256, 256, 256, False, False, True, 0.0),
    (None, None, 255, 129, 77, False, True, False, 0.5),
    (None, None, 97, 200, 64, True, False, True, 0.0),
    (None, None, 128, 96, 80, True, True, True, -1.0),
    (3, None, 65, 130, 96, False, True, False, 0.0),
    (2, 2, 64, 72, 17, False, False, True, 0.0),
]
# configs forced on the first case (the portable, ldmatrix-free and synchronous paths, other tiles)
FORCED = [
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=0, ASYNC=0),
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=1, ASYNC=0),
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=0, ASYNC=1),
    dict(BM=64, BN=64, BK=16, WM=2, WN=2, STAGES=4, GM=1, LDSM=1, ASYNC=1),
    dict(BM=128, BN=64, BK=32, WM=4, WN=1, STAGES=2, GM=4, LDSM=1, ASYNC=1),
]
SWEEP = [
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=16, WM=2, WN=4, STAGES=4, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=16, WM=4, WN=2, STAGES=4, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=16, WM=2, WN=2, STAGES=4, GM=16, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=32, WM=2, WN=4, STAGES=2, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=16, WM=2, WN=2, STAGES=4, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=16, WM=2, WN=2, STAGES=3, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=256, BK=16, WM=2, WN=4, STAGES=3, GM=8, LDSM=1, ASYNC=1),
    dict(BM=256, BN=128, BK=16, WM=4, WN=2, STAGES=3, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=256, BK=32, WM=2, WN=4, STAGES=2, GM=8, LDSM=1, ASYNC=1),
    dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=3, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=64, BK=32, WM=2, WN=2, STAGES=3, GM=8, LDSM=1, ASYNC=1),
    dict(BM=128, BN=128, BK=32, WM=4, WN=2, STAGES=2, GM=8, LDSM=1, ASYNC=1),
]


def pick_device(spec: str):
    if spec == "opencl:nvidia":
        for d in isthmus.devices():
            if d.backend == "opencl" and "NVIDIA" in d.vendor:
                return d
        raise SystemExit("no NVIDIA OpenCL device")
    return isthmus.device(spec)


def rel(out, ref) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if np.isnan(out).any():
        return float("nan")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def one_case(dev, rng, dt, case):
    ba, bb, m, n, k, ta, tb, f32, beta = case
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    a = rng.standard_normal(((ba,) if ba else ()) + a_shape).astype(dt)
    b = rng.standard_normal(((bb,) if bb else ()) + b_shape).astype(dt)
    batch = ba or bb
    out_dt = np.float32 if f32 else dt
    c_shape = ((batch,) if batch else ()) + (m, n)
    c0 = rng.standard_normal(c_shape).astype(out_dt) if beta else np.full(c_shape, np.nan, out_dt)
    c = dev.asarray(c0)
    res = gemm_mma.run(dev.asarray(a), dev.asarray(b), c, 1.25, beta, ta, tb, "float32" if f32 else None)
    ref = gemm_mma.reference(a, b, c0 if beta else None, 1.25, beta, ta, tb, out_dt)
    err = rel(res.to_numpy(), ref)
    tol = 1e-5 if f32 else (1e-2 if dt == BF16 else 2e-3)
    return err, bool(err <= tol)


def check(dev, rng, log):
    rows = []
    for name, dt in DTYPES.items():
        for case in CASES:
            try:
                err, ok = one_case(dev, rng, dt, case)
            except Exception as exc:  # noqa: BLE001 - record and go on: one bad variant must not hide the rest
                err, ok = str(exc)[:300], False
            rows.append({"dtype": name, "case": list(case), "err": err, "ok": ok})
            log(f"check {dev.id} {name} {case}: err={err} {'OK' if ok else 'FAIL'}")
        for p in FORCED:
            try:
                with forced(gemm_mma.FAMILY, p):
                    err, ok = one_case(dev, rng, dt, CASES[1])
                    err2, ok2 = one_case(dev, rng, dt, CASES[0])
                err, ok = max(err, err2), ok and ok2
            except Exception as exc:  # noqa: BLE001
                err, ok = str(exc)[:300], False
            rows.append({"dtype": name, "forced": p, "err": err, "ok": ok})
            log(f"check {dev.id} {name} forced {p}: err={err} {'OK' if ok else 'FAIL'}")
    return rows


def quick_check(dev, rng, log):
    """--quick: one odd-sized case per dtype, no forced configs (a smoke test of the script)."""
    rows = []
    for name, dt in DTYPES.items():
        err, ok = one_case(dev, rng, dt, CASES[1])
        rows.append({"dtype": name, "case": list(CASES[1]), "err": err, "ok": ok})
        log(f"check {dev.id} {name} {CASES[1]}: err={err} {'OK' if ok else 'FAIL'}")
    return rows


def _median_ms(dev, fn, reps, rounds):
    return measure.device_ms(dev, fn, repeat=rounds, warmup=1, batch=reps)


def _torch_ms(torch, fn, reps, rounds):
    return measure.device_ms(measure.TorchClock(torch), fn, repeat=rounds, warmup=1, batch=reps)


def _best(rows, size, top):
    """The ``top`` configs with the highest mean TFLOP/s over the dtypes at ``size``."""
    score = {}
    for r in rows:
        if r["size"] == size and "tflops" in r and not r.get("trans_b") and r["config"] is not None:
            score.setdefault(json.dumps(r["config"], sort_keys=True), []).append(r["tflops"])
    ranked = sorted(score, key=lambda c: -sum(score[c]) / len(score[c]))
    return [json.loads(c) for c in ranked[:top]]


def timing(dev, rng, sizes, configs, log, tb_too=True, top=None):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for size in sizes:
        if top and size != sizes[0]:
            configs = _best(rows, sizes[0], top)
            log(f"best at {sizes[0]}: {configs}")
        flops = 2.0 * size ** 3
        reps = max(3, int(2e13 // flops))
        for name, dt in DTYPES.items():
            a = rng.standard_normal((size, size)).astype(dt)
            b = rng.standard_normal((size, size)).astype(dt)
            tdt = torch.float16 if name == "float16" else torch.bfloat16
            ta = torch.from_numpy(a.view(np.int16)).cuda().view(tdt)
            tbm = torch.from_numpy(b.view(np.int16)).cuda().view(tdt)
            tc = torch.empty((size, size), dtype=tdt, device="cuda")
            t_ms = _torch_ms(torch, lambda: torch.mm(ta, tbm, out=tc), reps, 5)
            ref = (ta.float() @ tbm.float()).cpu().numpy()
            da, db = dev.asarray(a), dev.asarray(b)
            dc = dev.empty((size, size), dt)
            for p in configs:
                entry = {"size": size, "dtype": name, "torch_ms": t_ms, "torch_tflops": flops / t_ms / 1e9,
                         "config": p}
                try:
                    ctx = forced(gemm_mma.FAMILY, p) if p else _nothing()
                    with ctx:
                        ms = _median_ms(dev, lambda: gemm_mma.run(da, db, dc), reps, 5)
                        dev.synchronize()
                        err = rel(dc.to_numpy().astype(np.float32), ref)
                    entry.update(ms=ms, tflops=flops / ms / 1e9, ratio=t_ms / ms, err=err)
                except Exception as exc:  # noqa: BLE001
                    entry.update(error=str(exc)[:300])
                rows.append(entry)
                log(f"time {dev.id} {size}^3 {name} {p or 'resolved'}: "
                    + (f"{entry['tflops']:.1f} TFLOP/s, torch {entry['torch_tflops']:.1f}, "
                       f"ratio {entry['ratio']:.3f}, err {entry['err']:.2e}" if "ms" in entry else entry["error"]))
            if tb_too and size == sizes[0]:
                p = configs[0]
                try:
                    ctx = forced(gemm_mma.FAMILY, p) if p else _nothing()
                    with ctx:
                        ms = _median_ms(dev, lambda: gemm_mma.run(da, db, dc, trans_b=True), reps, 5)
                    log(f"time {dev.id} {size}^3 {name} trans_b {p or 'resolved'}: {flops / ms / 1e9:.1f} TFLOP/s")
                    rows.append({"size": size, "dtype": name, "trans_b": True, "config": p, "ms": ms,
                                 "tflops": flops / ms / 1e9, "torch_tflops": flops / t_ms / 1e9})
                except Exception as exc:  # noqa: BLE001
                    log(f"trans_b failed: {exc}")
            del da, db, dc, ta, tbm, tc
    return rows


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="folder for the report, gemm_mma_gpu-<backend>-<device>[-<tag>].md/.json")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--quick", action="store_true", help="one check per dtype, no timing (a smoke test, e.g. PoCL)")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--check", action="store_true")
    p.add_argument("--sweep", action="store_true", help="time every SWEEP config (else the resolved one)")
    p.add_argument("--configs", help="JSON list of configs to time instead")
    p.add_argument("--time", type=int, nargs="*", default=[])
    p.add_argument("--top", type=int, help="time sizes after the first with the best TOP configs only")
    p.add_argument("--json", help="append the results to this JSON-lines file")
    args = p.parse_args(argv)
    dev = pick_device(args.device)
    rng = np.random.default_rng()
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)

    log(f"device {dev.id} {dev.name} {dev.platform} driver {dev.driver_version} mma_sync={dev.mma_sync}")
    result = {"device": dev.info() if hasattr(dev, "info") else dev.id, "python": platform.python_version(),
              "numpy": np.__version__, "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    if args.quick:
        args.check, args.time = False, []
        result["check"] = quick_check(dev, rng, log)
    try:
        if args.check:
            result["check"] = check(dev, rng, log)
        if args.time:
            configs = json.loads(args.configs) if args.configs else (SWEEP if args.sweep else [None])
            import torch

            result["torch"] = torch.__version__
            result["time"] = timing(dev, rng, args.time, configs, log, top=args.top)
    except Exception:  # noqa: BLE001
        log(traceback.format_exc())
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result, default=str) + "\n")
    report = measure.Report("gemm_mma_gpu", f"Tensor-core gemm (gemm_mma) on {dev.name} ({dev.backend})", dev,
                            data=result)
    report.add_text("\n".join(["```", *lines, "```"]))  # the log: one line per check and per timed config
    print(report.markdown())
    if args.out:
        print(f"wrote {report.write(args.out, args.tag)}.md/.json")
    if not all(r["ok"] for r in result.get("check", [])):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
