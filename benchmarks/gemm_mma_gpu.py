"""Tensor-core gemm (gemm_mma) on a GPU: correctness over layouts, odd sizes, batching, output dtypes
and forced configs, then timing at square sizes next to torch.mm (cuBLAS) in the same process.

    python -m benchmarks gemm_mma_gpu --device cuda:0 --check --sweep --time 4096 8192 --out benchmarks/results/latest
    python -m benchmarks gemm_mma_gpu --device opencl:0 --quick           # smoke test (the portable path)

--device opencl:nvidia picks the first OpenCL device whose vendor is NVIDIA. Correctness: relative
Frobenius error against float64 NumPy; outputs of the checks are poisoned with NaN first. Timing of
the configs (--sweep, --configs, --shapes) is the tuner's: ``isthmus.tune("gemm", dtype=...,
trans_b=...)`` with the exhaustive strategy over the config list (each config checked against the
reference, then timed with device events, median per launch); torch.mm on the same data in the same
run, timed with CUDA events. ``--out DIR`` writes the report (``gemm_mma_gpu-<backend>-<device>.md/.json``);
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

from benchmarks import _results
import isthmus
from isthmus import measure
from isthmus.dtypes import lookup
from isthmus.ops.resolve import default_config, forced
from isthmus.ops.specs import gemm, gemm_mma
from isthmus.tune.runner import Measure

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
# configs forced on the first two cases (the ldmatrix-free and synchronous paths, other tiles,
# swizzled rings; rings of 48 KiB and more only where a device allows more than 48 KiB a
# work-group: CUDA, NVIDIA's OpenCL on the compute capabilities it is known for; a ring takes up to
# 128 bytes more to start on a 128-byte boundary)
FORCED = [
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=0, ASYNC=0, SWZ=0),
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=1, ASYNC=0, SWZ=1),
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=0, ASYNC=1, SWZ=1),
    dict(BM=64, BN=64, BK=16, WM=2, WN=2, STAGES=4, GM=1, LDSM=1, ASYNC=1, SWZ=1),
    dict(BM=128, BN=64, BK=64, WM=4, WN=1, STAGES=2, GM=4, LDSM=1, ASYNC=1, SWZ=1),
    dict(BM=32, BN=64, BK=32, WM=1, WN=2, STAGES=4, GM=1, LDSM=1, ASYNC=1, SWZ=1),
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=2, GM=8, LDSM=1, ASYNC=1, SWZ=1, PIPE=0),
    dict(BM=64, BN=64, BK=16, WM=2, WN=2, STAGES=2, GM=1, LDSM=1, ASYNC=1, SWZ=0, PIPE=1),
    dict(BM=64, BN=64, BK=32, WM=2, WN=2, STAGES=4, GM=1, LDSM=1, ASYNC=1, SWZ=1, PIPE=1),
]
FORCED_BIG = [  # rings of 48 KiB and more
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3, GM=8, LDSM=0, ASYNC=1, SWZ=1),
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3, GM=8, LDSM=1, ASYNC=1, SWZ=1, PIPE=0),
    dict(BM=64, BN=64, BK=64, WM=2, WN=2, STAGES=3, GM=1, LDSM=1, ASYNC=1, SWZ=1, PIPE=1),
    dict(BM=256, BN=128, BK=32, WM=4, WN=2, STAGES=3, GM=8, LDSM=1, ASYNC=1, SWZ=1),
    dict(BM=128, BN=256, BK=64, WM=2, WN=4, STAGES=3, GM=8, LDSM=1, ASYNC=1, SWZ=0),
]

FORCED_WGMMA = [  # Hopper under CUDA: warpgroup MMA, every operand layout (the first two cases)
    dict(BM=128, BN=256, BK=64, WM=8, WN=1, STAGES=4, GM=8, WGMMA=1),
    dict(BM=128, BN=128, BK=64, WM=8, WN=1, STAGES=5, GM=8, WGMMA=1),
    dict(BM=64, BN=64, BK=64, WM=4, WN=1, STAGES=3, GM=1, WGMMA=1),
    dict(BM=192, BN=128, BK=64, WM=12, WN=1, STAGES=3, GM=8, WGMMA=1),
]


def _c(bm, bn, bk, wm, wn, st, gm=8, swz=1):
    return dict(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, STAGES=st, GM=gm, LDSM=1, ASYNC=1, SWZ=swz)


# square sizes: rings under 48 KiB (every device) first, then the bigger ones (FORCED_BIG's devices)
SWEEP = [
    _c(128, 128, 32, 2, 2, 2, swz=0), _c(128, 128, 32, 2, 2, 2), dict(_c(128, 128, 32, 2, 2, 2), PIPE=0),
    _c(128, 128, 16, 2, 2, 4), _c(128, 128, 16, 2, 2, 4, swz=0),
]
SWEEP_BIG = [
    _c(128, 128, 32, 2, 2, 3), _c(128, 128, 32, 2, 2, 3, gm=16), _c(256, 128, 32, 4, 2, 2), _c(128, 256, 32, 2, 4, 2),
    _c(128, 128, 32, 2, 2, 4), _c(128, 128, 64, 2, 2, 3), _c(256, 128, 32, 4, 2, 3), _c(128, 256, 32, 2, 4, 3),
    _c(256, 128, 32, 4, 2, 4), _c(128, 256, 32, 2, 4, 4), _c(256, 128, 64, 4, 2, 3),
]
# the resolved config next to its closest rivals (the final table)
_MID = _c(128, 128, 32, 2, 2, 3)
NAMED = {
    "final_cuda": [None, _c(256, 128, 32, 4, 2, 3), _MID, _c(128, 256, 32, 2, 4, 4)],
    "final_opencl": [None, _MID, _c(128, 256, 32, 2, 4, 3), dict(_c(128, 128, 32, 2, 2, 2), PIPE=0),
                     dict(_c(128, 128, 32, 2, 2, 2, swz=0), PIPE=0)],
    "resolved": [None],
    "wgmma": [None, _c(128, 256, 32, 2, 4, 3), dict(FORCED_WGMMA[0], STAGES=3), FORCED_WGMMA[1],
              dict(FORCED_WGMMA[1], STAGES=6), dict(FORCED_WGMMA[1], STAGES=4), FORCED_WGMMA[3],
              dict(FORCED_WGMMA[0], GM=16)],
    "final_wgmma": [None, _c(128, 256, 32, 2, 4, 3)],  # the resolved config next to the best mma.sync one
}
# small and skinny problems: (m, n, k, trans_b) and the configs tried there (None: resolved)
SHAPES = [(512, 512, 512, False), (1024, 1024, 1024, False), (2048, 2048, 2048, False), (16, 4096, 4096, True),
          (64, 4096, 4096, True), (16, 4096, 11008, True), (64, 4096, 11008, True), (16, 11008, 4096, True)]
SMALL = [None, _c(128, 128, 32, 2, 2, 2, swz=0), _c(128, 128, 32, 2, 2, 3), _c(64, 64, 32, 2, 2, 3),
         _c(64, 128, 32, 2, 2, 3), _c(32, 64, 64, 1, 2, 3), _c(32, 32, 64, 1, 2, 4, gm=1), _c(64, 64, 64, 2, 2, 3, gm=1),
         _c(64, 32, 64, 2, 2, 3, gm=1), _c(32, 32, 64, 1, 2, 3, gm=1), _c(32, 32, 64, 1, 2, 6, gm=1),
         _c(64, 32, 64, 2, 2, 6, gm=1), _c(32, 64, 64, 1, 2, 6, gm=1), _c(64, 64, 64, 2, 2, 5, gm=1),
         dict(BM=64, BN=64, BK=64, WM=4, WN=1, STAGES=4, GM=1, WGMMA=1),
         dict(BM=128, BN=128, BK=64, WM=8, WN=1, STAGES=5, GM=8, WGMMA=1)]


def _small(dev):
    """SMALL, less the wgmma configs where the device has no warpgroup MMA and the rings it has no
    room for."""
    return [p for p in SMALL if (dev.wgmma or not (p or {}).get("WGMMA")) and
            (dev.local_mem_optin or p is None or gemm_mma.smem_bytes(p, False, False) + gemm_mma.RING_ALIGN <= dev.local_mem_size)]


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
        for p in FORCED + (FORCED_BIG if dev.local_mem_optin else []) + (FORCED_WGMMA if dev.wgmma else []):
            try:
                with forced(gemm_mma.SPEC, p):
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


def _torch_ms(torch, fn, reps, rounds):
    return measure.device_ms(measure.TorchClock(torch), fn, repeat=rounds, warmup=1, batch=reps)


def _best(rows, size, top):
    """The ``top`` configs with the highest mean TFLOP/s over the dtypes at ``size``."""
    score = {}
    for r in rows:
        if r["shape"] == [size, size, size, False] and "tflops" in r and r["config"] is not None:
            score.setdefault(json.dumps(r["config"], sort_keys=True), []).append(r["tflops"])
    ranked = sorted(score, key=lambda c: -sum(score[c]) / len(score[c]))
    return [json.loads(c) for c in ranked[:top]]


def _label(p) -> str:
    return "resolved" if p is None else "{BM}x{BN}x{BK} w{WM}x{WN} s{STAGES} gm{GM}".format(**p) + (
        " wgmma" if p.get("WGMMA") else f" swz{p.get('SWZ', 0)}")


def _full(family, p: dict) -> dict:
    """Config ``p`` over the family's tunable defaults: the config the tuner compiles and times."""
    return {**{t.name: t.default for t in family.tunables}, **p}


def timing(dev, rng, shapes, configs, log, dtypes=tuple(DTYPES), top=None):
    """Each (m, n, k, trans_b) shape with each config (None: the resolved one, the rule's), torch.mm on
    the same data first; after the first shape, ``top`` keeps the best configs there only. The configs
    are timed and checked (against float64 NumPy) by the tuner: ``isthmus.tune("gemm", dtype=...,
    trans_b=...)`` over the list with the exhaustive strategy, into no database, so what is timed is
    the kernel that ``gemm`` launches for that dtype and layout."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for si, (m, n, k, tb) in enumerate(shapes):
        if top and si == 1:
            configs = _best(rows, shapes[0][0], top)
            log(f"best at {shapes[0]}: {configs}")
        flops = 2.0 * m * n * k
        reps = int(min(200, max(3, 1e13 // flops)))
        problem = {"m": m, "n": n, "k": k}
        for name in dtypes:
            dt = DTYPES[name]
            a = rng.standard_normal((m, k), dtype=np.float32).astype(dt)
            b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32).astype(dt)
            tdt = torch.float16 if name == "float16" else torch.bfloat16
            ta = torch.from_numpy(a.view(np.int16)).cuda().view(tdt)
            tbm = torch.from_numpy(b.view(np.int16)).cuda().view(tdt)
            tc = torch.empty((m, n), dtype=tdt, device="cuda")
            rhs = tbm.t() if tb else tbm
            t_ms = _torch_ms(torch, lambda: torch.mm(ta, rhs, out=tc), reps, 5)
            del ta, tbm, tc
            family, dtype = gemm.SPEC.family(name).variant(trans_b=tb), lookup(name)
            full = {json.dumps(p, sort_keys=True): _full(family, p) for p in configs if p is not None}
            listed = [p for p in configs if p is not None and family.is_valid(full[json.dumps(p, sort_keys=True)],
                                                                               dev, problem, dtype)]
            for p in configs:
                if p is not None and p not in listed:
                    log(f"time {dev.id} {m}x{n}x{k}{' tb' if tb else ''} {name} {_label(p)}: outside the tuner's "
                        f"space on this device (a restriction of {family.name}), not timed")
            resolved = default_config(family, dev, problem, dtype)  # what the tuner measures first, as its default
            r = isthmus.tune("gemm", device=dev, problem=problem, dtype=name, trans_b=tb, strategy="exhaustive",
                             configs=[full[json.dumps(p, sort_keys=True)] for p in listed] or [resolved],
                             budget=max(1, len(listed)), database=False, measure=Measure(repeat=5))
            found = {json.dumps(dict(e.params), sort_keys=True): e for e in r.evaluations}
            measured = [(None, r.default_ms, "ok" if r.default_ms is not None else "failed: the resolved config")] \
                if None in configs else []
            for p in listed:
                e = found.get(json.dumps(full[json.dumps(p, sort_keys=True)], sort_keys=True))
                if e is None:  # the resolved config itself, measured once as the tuner's default
                    measured.append((p, r.default_ms, "ok" if r.default_ms is not None else "failed"))
                else:
                    measured.append((p, e.time_ms if e.status == "ok" else None,
                                     e.status + (f": {e.error}" if e.error else "")))
            for p, ms, status in measured:
                entry = {"shape": [m, n, k, tb], "dtype": name, "torch_ms": t_ms, "torch_tflops": flops / t_ms / 1e9,
                         "config": p, "status": status}
                if ms is not None:
                    entry.update(ms=ms, tflops=flops / ms / 1e9, ratio=t_ms / ms)
                else:
                    entry.update(error=status[:300])
                rows.append(entry)
                log(f"time {dev.id} {m}x{n}x{k}{' tb' if tb else ''} {name} {_label(p)}: "
                    + (f"{entry['tflops']:.1f} TFLOP/s, torch {entry['torch_tflops']:.1f}, ratio {entry['ratio']:.3f}"
                       if "ms" in entry else entry["error"]))
    return rows


def _compile_job(job):
    """One (config, dtype, layout) program compiled into the shared disk cache (a worker process)."""
    spec, p, name, ta, tb, m, n, k, f32 = job
    from isthmus.dtypes import lookup

    dev = pick_device(spec)
    dt = lookup(name)
    out_dt = lookup("float32") if f32 else dt
    shape = gemm_mma._Shape(1, m, n, k, 0, 0, (m, n))
    variant = gemm_mma._variant(dev, dt, ta, tb, shape, out_dt)
    family = gemm.SPEC.family(name).variant(trans_a=ta, trans_b=tb)  # what gemm launches (the tuner too)
    params = _full(family, p) if p is not None else default_config(family, dev, {"m": m, "n": n, "k": k}, dt)
    try:
        family.kernels(dev, dt, {**params, **dict(variant)})
        return None
    except Exception as exc:  # noqa: BLE001 - reported again when the config is run
        return f"{p} {name}: {str(exc)[:200]}"


def dump_binary(dev, out_dir, log):
    """The program of the resolved 4096^3 float16 config as the device compiled it (NVIDIA's
    OpenCL: PTX text), for reading its registers and spills with ptxas offline."""
    import os

    from isthmus.dtypes import lookup

    dt = lookup("float16")
    shape = gemm_mma._Shape(1, 4096, 4096, 4096, 0, 0, (4096, 4096))
    variant = gemm_mma._variant(dev, dt, False, False, shape, dt)
    for pipe in (1, 0):
        params = dict(gemm_mma.SPEC.defaults(dev, {"m": 4096, "n": 4096, "k": 4096}, dt), PIPE=pipe)
        kern = gemm_mma.SPEC.kernels(dev, dt, {**params, **dict(variant)})["gemm_mma"]
        binary = dev.compiler.binary(kern.program.native) or b""
        path = os.path.join(out_dir, f"gemm_mma-{dev.backend}-pipe{pipe}.bin")
        with open(path, "wb") as f:
            f.write(bytes(binary))
        log(f"wrote {path} ({len(binary)} bytes) for {params}")


def precompile(spec, dev, args, workers, log):
    """Every program the run will use, compiled by ``workers`` processes into the disk cache first
    (NVRTC / the OpenCL compiler take about a second per program; dozens are needed)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    jobs = set()

    def add(p, name, m, n, k, ta, tb, f32):
        jobs.add((spec, json.dumps(p, sort_keys=True), name, ta, tb, m, n, k, f32))

    if args.check:
        for name in DTYPES:
            for (_, _, m, n, k, ta, tb, f32, _) in CASES:
                add(None, name, m, n, k, ta, tb, f32)
            for p in FORCED + (FORCED_BIG if dev.local_mem_optin else []) + (FORCED_WGMMA if dev.wgmma else []):
                for case in CASES[:2]:
                    add(p, name, *case[2:5], case[5], case[6], case[7])
    squares = [(n, n, n, False) for n in args.time]
    configs = ((NAMED[args.configs] if args.configs in NAMED else json.loads(args.configs)) if args.configs else
               SWEEP + (SWEEP_BIG if dev.local_mem_optin else []) if args.sweep else [None])
    for shapes, cfgs in ((squares, configs), (SHAPES if args.shapes else [], [None] if args.shapes_resolved else _small(dev))):
        for (m, n, k, tb) in shapes:
            for name in args.dtypes:
                for p in cfgs:
                    add(p, name, m, n, k, False, tb, False)
    t0 = time.time()
    todo = [(j[0], json.loads(j[1]), *j[2:]) for j in sorted(jobs, key=str)]
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
        errors = [e for e in ex.map(_compile_job, todo) if e]
    log(f"precompiled {len(todo)} programs in {time.time() - t0:.1f} s with {workers} processes"
        + (f"; {len(errors)} failed, e.g. {errors[0]}" if errors else ""))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="folder for the report, gemm_mma_gpu-<backend>-<device>[-<tag>].md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--quick", action="store_true", help="one check per dtype, no timing (a smoke test, e.g. PoCL)")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--check", action="store_true")
    p.add_argument("--sweep", action="store_true", help="time every SWEEP config (else the resolved one)")
    p.add_argument("--configs", help="JSON list of configs to time instead (null: the resolved one)")
    p.add_argument("--time", type=int, nargs="*", default=[], help="square sizes")
    p.add_argument("--shapes", action="store_true", help="time SHAPES (small, skinny) with the SMALL configs")
    p.add_argument("--shapes-resolved", action="store_true", help="time SHAPES with the resolved config only")
    p.add_argument("--dtypes", nargs="*", default=list(DTYPES))
    p.add_argument("--top", type=int, help="time sizes after the first with the best TOP configs only")
    p.add_argument("--json", help="append the results to this JSON-lines file")
    p.add_argument("--precompile", type=int, default=0, help="compile every program first with N processes")
    p.add_argument("--dump", help="write the compiled program of the resolved 4096^3 config into this folder")
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
        if args.precompile:
            try:
                precompile(args.device, dev, args, args.precompile, log)
            except Exception:  # noqa: BLE001 - only a head start: the run compiles what is missing
                log("precompile failed: " + traceback.format_exc())
        if args.dump:
            dump_binary(dev, args.dump, log)
        if args.check:
            result["check"] = check(dev, rng, log)
        import torch

        result["torch"] = torch.__version__
        result["time"] = []
        if args.time:
            if args.configs:
                configs = NAMED[args.configs] if args.configs in NAMED else json.loads(args.configs)
            elif args.sweep:
                configs = SWEEP + (SWEEP_BIG if dev.local_mem_optin else [])
            else:
                configs = [None]
            shapes = [(n, n, n, False) for n in args.time]
            result["time"] += timing(dev, rng, shapes, configs, log, args.dtypes, top=args.top)
        if args.shapes:
            configs = [None] if args.shapes_resolved else _small(dev)
            result["time"] += timing(dev, rng, SHAPES, configs, log, args.dtypes)
    except Exception:  # noqa: BLE001
        log(traceback.format_exc())
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result, default=str) + "\n")
    report = measure.Report("gemm_mma_gpu", f"Tensor-core gemm (gemm_mma) on {dev.name} ({dev.backend})", dev,
                            data=result)
    report.add_text("\n".join(["```", *lines, "```"]))  # the log: one line per check and per timed config
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    if not all(r["ok"] for r in result.get("check", [])):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
