"""rmsnorm (plain and fused with the residual add) and layernorm next to their peers, in one run
(issue 27 item 1): NumPy on a CPU device; on a CUDA device torch eager, Liger Kernel (when
importable) and a vLLM-style fused add + rmsnorm written in torch; each as GB/s, % of the device's
copy bandwidth and the peer's time over isthmus's (above 1: isthmus is faster).

    python -m benchmarks norms [--device cuda:0] [--dtypes float32,bfloat16] [--rows 16384] [--run QUESTION]
    python -m benchmarks norms --quick          # smoke test: one small case per op

Sizes: hidden 2048, 4096, 8192 and 3000 (odd) at ``--rows`` rows (default 16384 on a GPU, 1024 on
a CPU), and decode sizes (1, 4, 16, 64 rows) at hidden 4096. Bytes count each input read once and
each output written once (rmsnorm: x, out and the weight; fused: x and residual read, residual and
out written; layernorm: x, out, weight and bias; layernorm+residual: that and the residual's read and
write). Copy bandwidth: a device-to-device copy of x
(read + write), timed the same way. Times: ``reps`` calls then a wait for the device, the median of
``--rounds`` rounds, the sides alternating round by round (so the machine's load hits all of them).
NumPy's calls are the float32 formulas users write (``x / np.sqrt((x*x).mean(-1) + eps) * w``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure
from isthmus.dtypes import lookup

SMOKE = ["--quick", "--out", "{out}"]
HIDDEN = [2048, 4096, 8192, 3000]
DECODE = [1, 4, 16, 64]
EPS = 1e-6


def _time(fn, sync, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t0) / reps


def timed(sides: dict, sync, rounds: int, budget: float) -> dict:
    """Median seconds per call of each side (a callable), the sides alternating round by round."""
    for fn in sides.values():  # warm-up: compiles, caches, autotuners
        fn()
    sync()
    reps = {k: max(1, min(1000, int(budget / rounds / max(_time(fn, sync, 1), 1e-7)))) for k, fn in sides.items()}
    times: dict = {k: [] for k in sides}
    for i in range(rounds):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for k in order:
            times[k].append(_time(sides[k], sync, reps[k]))
    return {k: statistics.median(v) for k, v in times.items()}


def _np_rmsnorm(x, w, r=None):
    if r is not None:
        np.add(r, x, out=r)
        x = r
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + np.float32(EPS)) * w


def _np_layernorm(x, w, b, r=None):
    if r is not None:
        np.add(r, x, out=r)
        x = r
    mean = x.mean(axis=-1, keepdims=True)
    c = x - mean
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + np.float32(1e-5)) * w + b


def _torch_peers(dtype: str):
    """{name: (setup(x, w, b, r) -> call)} of the GPU peers that import here."""
    try:
        import torch
    except ImportError:
        return {}, None
    if not torch.cuda.is_available():
        return {}, None
    torch.backends.cuda.matmul.allow_tf32 = False
    peers = {}

    def eager_rms(x, w, b, r):
        return lambda: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)

    def vllm_fused(x, w, b, r):
        def call():  # vLLM's RMSNorm.forward_native with a residual
            s = x.float() + r.float()
            r.copy_(s.to(x.dtype))
            s = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + EPS)
            return s.to(x.dtype) * w
        return call

    def eager_ln(x, w, b, r):
        return lambda: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    def eager_add_ln(x, w, b, r):
        def call():  # the residual add, then the norm of the sum (two kernels)
            r.add_(x)
            return torch.nn.functional.layer_norm(r, (x.shape[-1],), w, b, 1e-5)
        return call

    peers["rmsnorm"] = {"torch": eager_rms}
    peers["rmsnorm+residual"] = {"torch (vLLM-style)": vllm_fused}
    peers["layernorm"] = {"torch": eager_ln}
    peers["layernorm+residual"] = {"torch (add, layer_norm)": eager_add_ln}
    try:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction

        peers["rmsnorm"]["Liger"] = lambda x, w, b, r: lambda: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama",
                                                                                          False)
        peers["layernorm"]["Liger"] = lambda x, w, b, r: lambda: LigerLayerNormFunction.apply(x, w, b, 1e-5)
    except ImportError:
        pass
    tdt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    return peers, (torch, tdt)


def cases(dev, dtypes: list[str], rows: int, quick: bool):
    shapes = [(8, 64)] if quick else [(rows, h) for h in HIDDEN] + [(r, 4096) for r in DECODE]
    ops = ["rmsnorm", "rmsnorm+residual", "layernorm", "layernorm+residual"]
    for dtype in dtypes:
        for shape in shapes:
            for op in ops:
                yield op, dtype, shape


def _draw(rng, shape: tuple, dt) -> np.ndarray:
    """Normal values of ``shape``: at most 4M drawn, repeated over the rest (a memory-bound op's time
    does not depend on them; drawing 134M values took seconds a case on the GPU machine's host)."""
    n = int(np.prod(shape))
    base = rng.standard_normal(min(n, 1 << 22), dtype=np.float32).astype(dt.np)
    if base.size == n:
        return base.reshape(shape)
    raw = base.view(f"u{base.itemsize}")  # (bfloat16's element copies are slow: the bits are copied)
    out, m = np.empty(n, raw.dtype), raw.size
    out[:n // m * m].reshape(-1, m)[:] = raw
    out[n // m * m:] = raw[:n % m]
    return out.view(base.dtype).reshape(shape)


def run_case(dev, rng, op, dtype, shape, peers, torch_mod, rounds, budget) -> dict:
    dt = lookup(dtype)
    rows, cols = shape
    x, r = _draw(rng, shape, dt), _draw(rng, shape, dt)
    w = rng.standard_normal(cols, dtype=np.float32).astype(dt.np)
    b = rng.standard_normal(cols, dtype=np.float32).astype(dt.np)
    dx, dw, db, dr = dev.asarray(x), dev.asarray(w), dev.asarray(b), dev.asarray(r)
    out = dev.empty(shape, dt.np)
    n, size = rows * cols, dt.np.itemsize
    if op == "rmsnorm":
        ours, nbytes = (lambda: isthmus.ops.rmsnorm(dx, dw, EPS, out=out)), (2 * n + cols) * size
    elif op == "rmsnorm+residual":  # the residual grows call by call: its values do not matter to the time
        ours, nbytes = (lambda: isthmus.ops.rmsnorm(dx, dw, EPS, dr, out=out)), (4 * n + cols) * size
    elif op == "layernorm":
        ours, nbytes = (lambda: isthmus.ops.layernorm(dx, dw, db, 1e-5, out=out)), (2 * n + 2 * cols) * size
    else:
        ours, nbytes = (lambda: isthmus.ops.layernorm(dx, dw, db, 1e-5, dr, out=out)), (4 * n + 2 * cols) * size
    copy_src, copy_dst = dev.asarray(x), dev.empty(shape, dt.np)
    sides = {"isthmus": ours, "copy": lambda: dev._device_copy(copy_dst._handle(), copy_src._handle(), x.nbytes)}
    if dev.kind == "cpu" and dtype == "float32":
        hx, hw, hb, hr = x.copy(), w.copy(), b.copy(), r.copy()
        sides["NumPy"] = {"rmsnorm": lambda: _np_rmsnorm(hx, hw), "rmsnorm+residual": lambda: _np_rmsnorm(hx, hw, hr),
                          "layernorm": lambda: _np_layernorm(hx, hw, hb),
                          "layernorm+residual": lambda: _np_layernorm(hx, hw, hb, hr)}[op]
    syncs = [dev.synchronize]
    if torch_mod is not None and peers.get(op):
        torch, tdt = torch_mod
        tx, tw, tb, tr = (torch.from_numpy(a.astype(np.float32)).to("cuda", tdt) for a in (x, w, b, r))
        for name, setup in peers[op].items():
            sides[name] = setup(tx, tw, tb, tr)
        syncs.append(torch.cuda.synchronize)
    t = timed(sides, lambda: [s() for s in syncs], rounds, budget)
    copy_gbs = 2 * x.nbytes / t["copy"] / 1e9
    gbs = nbytes / t["isthmus"] / 1e9
    row = {"op": op, "dtype": dtype, "shape": f"{rows}x{cols}", "us": t["isthmus"] * 1e6, "GBs": gbs,
           "copy_GBs": copy_gbs, "pct_copy": 100 * gbs / copy_gbs,
           "peers": {k: {"us": v * 1e6, "ratio": v / t["isthmus"]} for k, v in t.items() if k not in ("isthmus", "copy")}}
    for a in (dx, dw, db, dr, out, copy_src, copy_dst):
        a.close()
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--rows", type=int, default=None, help="rows of the hidden-size cases (default: 16384 GPU, 1024 CPU)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per case and side (about)")
    p.add_argument("--quick", action="store_true", help="one small case per op (a smoke test, not a measurement)")
    p.add_argument("--out", default=None, help="folder for norms-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    rows = args.rows or (1024 if dev.kind == "cpu" else 16384)
    rng = np.random.default_rng(0)
    dtypes = [d for d in args.dtypes.split(",") if dev.supports(d)]
    out_rows = []
    peer_cache: dict = {}
    for op, dtype, shape in cases(dev, dtypes, rows, args.quick):
        if dtype not in peer_cache:
            peer_cache[dtype] = _torch_peers(dtype) if dev.backend == "cuda" else ({}, None)
        peers, torch_mod = peer_cache[dtype]
        row = run_case(dev, rng, op, dtype, shape, peers, torch_mod, 2 if args.quick else args.rounds,
                       0.01 if args.quick else args.budget)
        out_rows.append(row)
        print(f"{op} {dtype} {row['shape']}: {row['GBs']:.3g} GB/s, {row['pct_copy']:.0f}% of copy; "
              + ", ".join(f"{k} {v['ratio']:.2f}x" for k, v in row["peers"].items()), flush=True)
    names = sorted({k for r in out_rows for k in r["peers"]})
    report = measure.Report("norms", f"rmsnorm and layernorm on {dev.name} ({dev.backend}) vs their peers", dev,
                            data={"rows": out_rows},
                            notes=[f"NumPy {np.__version__}; isthmus: shipped configs and the spec's rule; "
                                   "peer / isthmus: the peer's median time per call over isthmus's (above 1: isthmus "
                                   "is faster); NumPy is timed on float32 only"])
    report.add_table(["op", "dtype", "shape", "isthmus us", "GB/s", "% of copy"] + [f"{n} / isthmus" for n in names],
                     [[r["op"], r["dtype"], r["shape"], f"{r['us']:.4g}", f"{r['GBs']:.3g}", f"{r['pct_copy']:.0f}%"]
                      + [f"{r['peers'][n]['ratio']:.2f}x" if n in r["peers"] else "-" for n in names]
                      for r in out_rows])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
