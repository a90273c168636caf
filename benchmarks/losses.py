"""cross_entropy and fused_linear_cross_entropy next to their peers, in one run (issue 27 item 5).

    python -m benchmarks losses [--device opencl:0] [--out DIR] [--run QUESTION]
    python -m benchmarks losses --device cuda:0 --run losses-h200     # the GPU machine: torch, Liger
    python -m benchmarks losses --quick                               # smoke test: small cases

On a CPU device (PoCL) the peer is NumPy (float32, the same math: log-softmax by max/exp/sum, the
gradient ``softmax - onehot`` scaled by the mean; the fused op's plain path: ``h @ w.T`` materialized,
then the same, then ``g @ w`` and ``g.T @ h``). On a CUDA device, when torch is importable: torch eager
(``F.cross_entropy``; with the gradient, ``backward`` of it; the fused op's plain path with the logits
materialized) and Liger Kernel where importable (``LigerCrossEntropyFunction``,
``LigerFusedLinearCrossEntropyFunction``), with the peak extra device memory of the fused runs (torch:
``max_memory_allocated`` over what the inputs hold; isthmus: the growth of CuPy's pool, which keeps freed
blocks, from an emptied pool: an upper bound of its peak).

Timing: wall clock of ``reps`` calls then a wait for the device, median over rounds; the sides alternate
round by round. GB/s counts the logits read once (forward) or read once and written once (with the
gradient): the traffic of a single pass; ``copy``: the device's copy bandwidth (NumPy's ``copyto`` on the
CPU, ``Tensor.copy_`` on CUDA), so ``% copy`` is GB/s over it.
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

CE_CPU = [(256, 32000), (64, 128256), (1000, 3001)]
CE_GPU = [(4096, 32000), (4096, 128256), (64, 128256)]
FUSED_CPU = [(256, 128, 8000)]
FUSED_GPU = [(8192, 4096, 128256)]
SMOKE = ["--quick", "--out", "{out}"]


def _time(fn, sync, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t0) / reps


def timed(sides: dict, rounds: int, budget: float) -> dict:
    """{name: median seconds per call}; ``sides``: name -> (fn, sync), run in alternating rounds."""
    for fn, sync in sides.values():  # warm-up (compiles, caches)
        fn(), sync()
    one = max(max(_time(fn, sync, 1) for fn, sync in sides.values()), 1e-6)
    reps = max(1, min(100, int(budget / rounds / one / len(sides))))
    got: dict = {name: [] for name in sides}
    names = list(sides)
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            fn, sync = sides[name]
            got[name].append(_time(fn, sync, reps))
    return {name: statistics.median(ts) for name, ts in got.items()}


# ---- NumPy peers --------------------------------------------------------------------------------
def np_ce(x, t, grad=False):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(s[:, 0])
    valid = t != -100
    safe = np.where(valid, t, 0)
    n = max(int(valid.sum()), 1)
    rows = np.arange(len(t))
    loss = np.float32(((lse - x[rows, safe]) * valid).sum() / n)
    if not grad:
        return loss
    e /= s
    e[rows, safe] -= 1
    e *= (valid / np.float32(n)).astype(np.float32)[:, None]
    return loss, e


def np_fused(h, w, t):
    loss, g = np_ce(h @ w.T, t, grad=True)
    return loss, g @ w, g.T @ h


# ---- torch / Liger (CUDA) -----------------------------------------------------------------------
def _torch():
    try:
        import torch
        import torch.nn.functional as F  # noqa: N812
    except ImportError:
        return None, None
    return (torch, F) if torch.cuda.is_available() else (None, None)


def _liger():
    try:
        from liger_kernel.transformers import LigerCrossEntropyLoss, LigerFusedLinearCrossEntropyLoss
    except Exception:  # noqa: BLE001 - not installed, or its Triton does not load
        return None
    # (Liger's modules: loss(logits, targets); fused: loss(weight, hidden, targets))
    return LigerCrossEntropyLoss(), LigerFusedLinearCrossEntropyLoss()


def _copy_gbs(dev, torch, n_bytes: int) -> float:
    if torch is not None:
        x = torch.empty(n_bytes // 4, device="cuda")
        y = torch.empty_like(x)
        t = timed({"copy": (lambda: y.copy_(x), torch.cuda.synchronize)}, 5, 0.5)["copy"]
        return 2 * n_bytes / t / 1e9
    x = np.ones(n_bytes // 4, np.float32)
    y = np.empty_like(x)
    return 2 * n_bytes / timed({"copy": (lambda: np.copyto(y, x), lambda: None)}, 5, 0.5)["copy"] / 1e9


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timed calls per case (about)")
    p.add_argument("--dtypes", default=None, help="comma-separated logits dtypes (default: float32 on a CPU, "
                                                  "float32,bfloat16 on a GPU)")
    p.add_argument("--quick", action="store_true", help="small cases (a smoke test, not a measurement)")
    p.add_argument("--out", default=None)
    p.add_argument("--tag", default="")
    _results.add_run_option(p)
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    torch, F = _torch() if dev.backend == "cuda" else (None, None)
    liger = _liger() if torch is not None else None
    gpu = torch is not None
    dtypes = (args.dtypes or ("float32,bfloat16" if gpu else "float32")).split(",")
    ce_cases = [(64, 1000)] if args.quick else CE_GPU if gpu else CE_CPU
    fused_cases = [(48, 32, 300)] if args.quick else FUSED_GPU if gpu else FUSED_CPU
    rounds, budget = (2, 0.02) if args.quick else (args.rounds, args.budget)
    rng = np.random.default_rng(0)
    copy = _copy_gbs(dev, torch, 64 << 20 if not args.quick else 1 << 20)
    rows, fused_rows = [], []
    for dtype in dtypes:
        npdt = np.dtype(dtype) if dtype != "bfloat16" else np.dtype(isthmus.dtypes.lookup("bfloat16").np)
        for n, v in ce_cases:
            x = rng.standard_normal((n, v), dtype=np.float32)
            t = rng.integers(0, v, n)
            t[rng.random(n) < 0.05] = -100
            dx, dt = dev.asarray(x.astype(npdt)), dev.asarray(t)
            loss = dev.empty((1,), npdt)
            nbytes = x.size * npdt.itemsize
            for mode in ("forward", "forward+grad in place"):
                grad = mode != "forward"
                # (in place: the logits become the gradient; repeated calls keep the same traffic)
                sides = {"isthmus": ((lambda: isthmus.ops.cross_entropy(dx, dt, grad=True, grad_out=dx, out=loss))
                                     if grad else (lambda: isthmus.ops.cross_entropy(dx, dt, out=loss)),
                                     dev.synchronize)}
                if gpu:
                    tx = torch.from_numpy(x).cuda().to(getattr(torch, dtype))
                    tt = torch.from_numpy(t).cuda()
                    if grad:
                        tx.requires_grad_(True)
                        sides["torch"] = (lambda tx=tx, tt=tt: F.cross_entropy(tx, tt).backward(),
                                          torch.cuda.synchronize)
                        if liger is not None:
                            lx = tx.detach().clone().requires_grad_(True)
                            sides["liger"] = (lambda lx=lx, tt=tt: liger[0](lx, tt).backward(),
                                              torch.cuda.synchronize)
                    else:
                        sides["torch"] = (lambda tx=tx, tt=tt: F.cross_entropy(tx, tt), torch.cuda.synchronize)
                        if liger is not None:
                            sides["liger"] = (lambda tx=tx, tt=tt: liger[0](tx, tt), torch.cuda.synchronize)
                elif dtype == "float32":
                    sides["numpy"] = ((lambda: np_ce(x, t, grad=True)) if grad else (lambda: np_ce(x, t)), lambda: None)
                secs = timed(sides, rounds, budget)
                moved = nbytes * (2 if grad else 1)
                row = {"op": "cross_entropy", "dtype": dtype, "size": f"{n}x{v}", "mode": mode,
                       **{f"{k}_ms": s * 1e3 for k, s in secs.items()},
                       "isthmus_GBs": moved / secs["isthmus"] / 1e9}
                row["pct_copy"] = 100 * row["isthmus_GBs"] / copy
                for peer in ("numpy", "torch", "liger"):
                    if peer in secs:
                        row[f"vs_{peer}"] = secs[peer] / secs["isthmus"]
                rows.append(row)
                print(row, flush=True)
            dx.close()
        for m, h, v in fused_cases:
            hs = (rng.standard_normal((m, h), dtype=np.float32) / np.sqrt(h)).astype(npdt)
            ws = rng.standard_normal((v, h), dtype=np.float32).astype(npdt)
            t = rng.integers(0, v, m)
            dh, dw, dt = dev.asarray(hs), dev.asarray(ws), dev.asarray(t)
            sides = {"isthmus": (lambda: isthmus.ops.fused_linear_cross_entropy(dh, dw, dt, grad=True),
                                 dev.synchronize)}
            mem = {}
            if gpu:
                th = torch.from_numpy(hs.astype(np.float32)).cuda().to(getattr(torch, dtype)).requires_grad_(True)
                tw = torch.from_numpy(ws.astype(np.float32)).cuda().to(getattr(torch, dtype)).requires_grad_(True)
                tt = torch.from_numpy(t).cuda()

                def plain(th=th, tw=tw, tt=tt):
                    F.cross_entropy((th @ tw.T).float(), tt).backward()
                    th.grad = tw.grad = None

                sides["torch"] = (plain, torch.cuda.synchronize)
                if liger is not None:
                    def lig(th=th, tw=tw, tt=tt):
                        liger[1](tw, th, tt).backward()
                        th.grad = tw.grad = None
                    sides["liger"] = (lig, torch.cuda.synchronize)
                for name, (fn, sync) in sides.items():
                    if name == "isthmus":
                        import cupy

                        pool = cupy.get_default_memory_pool()
                        dev.synchronize()
                        pool.free_all_blocks()
                        before = pool.total_bytes()
                        fn()
                        dev.synchronize()
                        mem[name] = (pool.total_bytes() - before) / 1e9
                    else:
                        torch.cuda.synchronize()
                        torch.cuda.reset_peak_memory_stats()
                        base = torch.cuda.memory_allocated()
                        fn()
                        torch.cuda.synchronize()
                        mem[name] = (torch.cuda.max_memory_allocated() - base) / 1e9
            elif dtype == "float32":
                sides["numpy"] = (lambda: np_fused(hs, ws, t), lambda: None)
            secs = timed(sides, rounds, budget)
            row = {"op": "fused_linear_cross_entropy", "dtype": dtype, "size": f"{m}x{h}x{v}", "mode": "fwd+bwd",
                   **{f"{k}_ms": s * 1e3 for k, s in secs.items()}, **{f"{k}_extra_GB": g for k, g in mem.items()},
                   "isthmus_TFLOPs": 6 * m * h * v / secs["isthmus"] / 1e12}
            for peer in ("numpy", "torch", "liger"):
                if peer in secs:
                    row[f"vs_{peer}"] = secs[peer] / secs["isthmus"]
            fused_rows.append(row)
            print(row, flush=True)
    report = measure.Report("losses", f"cross_entropy and fused_linear_cross_entropy on {dev.name} ({dev.backend})",
                            dev, data={"rows": rows, "fused": fused_rows, "copy_GBs": copy},
                            notes=[f"NumPy {np.__version__}" + (f"; torch {torch.__version__}" if gpu else "")
                                   + ("; Liger Kernel" if liger is not None else "; no Liger Kernel" if gpu else ""),
                                   f"copy bandwidth {copy:.1f} GB/s"])
    peers = ["torch", "liger"] if gpu else ["numpy"]
    report.add_table(["op", "dtype", "size", "mode", "isthmus ms", *[f"{p} ms" for p in peers], "isthmus GB/s",
                      "% copy", *[f"vs {p}" for p in peers]],
                     [[r["op"], r["dtype"], r["size"], r["mode"], f"{r['isthmus_ms']:.3f}",
                       *[f"{r[p + '_ms']:.3f}" if p + "_ms" in r else "-" for p in peers], f"{r['isthmus_GBs']:.3g}",
                       f"{r['pct_copy']:.0f}%", *[f"{r['vs_' + p]:.2f}x" if "vs_" + p in r else "-" for p in peers]]
                      for r in rows])
    report.add_table(["op", "dtype", "tokens x H x V", "isthmus ms", *[f"{p} ms" for p in peers], "isthmus TFLOP/s",
                      *[f"vs {p}" for p in peers], *[f"{p} extra GB" for p in (["isthmus", *peers] if gpu else [])]],
                     [[r["op"], r["dtype"], r["size"], f"{r['isthmus_ms']:.1f}",
                       *[f"{r[p + '_ms']:.1f}" if p + "_ms" in r else "-" for p in peers], f"{r['isthmus_TFLOPs']:.3g}",
                       *[f"{r['vs_' + p]:.2f}x" if "vs_" + p in r else "-" for p in peers],
                       *[f"{r[p + '_extra_GB']:.2f}" if p + "_extra_GB" in r else "-"
                         for p in (["isthmus", *peers] if gpu else [])]] for r in fused_rows])
    report.add_text("vs X: X's median time per call over isthmus's (above 1: isthmus is faster). GB/s: the logits "
                    "read once (forward), read and written once (with the gradient in place); % copy: over the "
                    "copy bandwidth measured in the same run. Fused: forward and backward, 6*m*h*v flops.")
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
