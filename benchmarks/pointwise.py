"""Transformer pointwise ops (rope, silu_mul, gelu_mul, embedding) next to their alternatives in one run
(issue 27 items 2-4, 8): on a CPU device NumPy; on a GPU torch eager and Liger Kernel where importable.

    python -m benchmarks pointwise [--device opencl:0] [--run QUESTION]     # PoCL: vs NumPy
    python -m benchmarks pointwise --device cuda:0 --run pointwise-h200       # GPU: vs torch, Liger
    python -m benchmarks pointwise --quick                                    # smoke test

Each case's GB/s counts every input read once and every output written once; "% of copy" is that
over the device's copy bandwidth measured in the same run (isthmus.measure.copy_bandwidth). The
NumPy side is what a NumPy user writes (``g / (1 + exp(-g)) * u``, ``table[ids]`` into ``out``, HF's
rotate_half with cos/sin of the positions); CPU timings alternate the two sides round by round
(benchmarks.memory_bound_pocl.pair). On a GPU: isthmus by device events (isthmus.measure.device_ms),
torch and Liger by CUDA events, the median of rounds of back-to-back calls; rope's Liger row times
``LigerRopeFunction`` on cos/sin tables computed beforehand (torch's row computes them, as HF does).
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys

import numpy as np

from benchmarks import _results
from benchmarks.memory_bound_pocl import pair
import isthmus
from isthmus import measure

SMOKE = ["--quick", "--out", "{out}"]
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
# (rows, cols) of the gated units; rope (tokens, q heads, kv heads, head_dim); embedding (ids, vocab, hidden)
CPU = {"glu": [(512, 4096), (97, 3000), (8, 14336)], "rope": [(256, 32, 8, 128), (1, 32, 8, 128)],
       "embedding": [(2048, 32000, 1024), (8, 32000, 4096)]}
GPU = {"glu": [(16384, 2048), (16384, 4096), (16384, 8192), (16384, 3000), (4096, 14336), (1, 14336), (64, 14336)],
       "rope": [(16384, 32, 8, 128), (1, 32, 8, 128), (64, 32, 8, 128)],
       "embedding": [(16384, 128256, 4096), (16384, 32000, 3000), (1, 128256, 4096), (64, 128256, 4096)]}
QUICK = {"glu": [(7, 33)], "rope": [(3, 2, 1, 16)], "embedding": [(5, 11, 24)]}


# ---- NumPy: what a NumPy user writes ----------------------------------------------------------------
def np_silu(g, u):
    return g / (1 + np.exp(-g)) * u


def np_gelu(g, u):
    return 0.5 * g * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (g + np.float32(0.044715) * g * g * g))) * u


def np_rope(q, k, pos, inv):
    angle = pos.astype(np.float32)[:, None] * inv
    cos, sin = np.cos(np.concatenate([angle, angle], -1))[:, None], np.sin(np.concatenate([angle, angle], -1))[:, None]

    def turn(x):
        h = x.shape[-1] // 2
        return x * cos + np.concatenate([-x[..., h:], x[..., :h]], -1) * sin
    return turn(q), turn(k)


# ---- the cases --------------------------------------------------------------------------------------
def cases(dev, rng, sizes: dict, dtype):
    """(op, label, bytes moved, ours, numpy or None, torch maker) per case; a torch maker takes
    (torch, liger: bool) and returns a callable or None."""
    from isthmus.ops.specs.rope import inv_freq, scaling_key

    np_dt, size = isthmus.dtypes.lookup(dtype).np, isthmus.dtypes.lookup(dtype).np.itemsize
    for rows, cols in sizes["glu"]:
        g, u = (rng.standard_normal((rows, cols), dtype=np.float32).astype(np_dt) for _ in range(2))
        dg, du, dy = dev.asarray(g), dev.asarray(u), dev.empty((rows, cols), np_dt)
        for op, ours, ref, tname in (("silu_mul", lambda dg=dg, du=du, dy=dy: isthmus.ops.silu_mul(dg, du, out=dy),
                                      np_silu, "silu"),
                                     ("gelu_mul", lambda dg=dg, du=du, dy=dy: isthmus.ops.gelu_mul(dg, du, out=dy),
                                      np_gelu, "gelu")):
            yield (op, f"{rows}x{cols}", 3 * rows * cols * size, ours,
                   (lambda g=g, u=u, ref=ref: ref(g, u)) if dtype == "float32" else None,
                   lambda torch, liger, g=g, u=u, tname=tname: _torch_glu(torch, liger, tname, g, u))
    for tokens, hq, hk, hd in sizes["rope"]:
        q = rng.standard_normal((tokens, hq, hd), dtype=np.float32).astype(np_dt)
        k = rng.standard_normal((tokens, hk, hd), dtype=np.float32).astype(np_dt)
        pos = rng.integers(0, 8192, tokens).astype(np.int64)
        dq, dk, dp = dev.asarray(q), dev.asarray(k), dev.asarray(pos)
        inv = inv_freq(hd, 500000.0, scaling_key("rope", LLAMA3)).astype(np.float32)
        yield ("rope", f"{tokens}x({hq}+{hk})x{hd}", 2 * tokens * (hq + hk) * hd * size + 8 * tokens,
               lambda dq=dq, dk=dk, dp=dp: isthmus.ops.rope(dq, dp, theta=500000.0, k=dk, rope_scaling=LLAMA3),
               (lambda q=q, k=k, pos=pos, inv=inv: np_rope(q, k, pos, inv)) if dtype == "float32" else None,
               lambda torch, liger, q=q, k=k, pos=pos, inv=inv: _torch_rope(torch, liger, q, k, pos, inv))
    for n, vocab, hidden in sizes["embedding"]:
        table = rng.standard_normal((vocab, hidden), dtype=np.float32).astype(np_dt)
        ids = rng.integers(0, vocab, n).astype(np.int32)
        dt_, di, dy = dev.asarray(table), dev.asarray(ids), dev.empty((n, hidden), np_dt)
        hy = np.empty((n, hidden), np_dt)
        yield ("embedding", f"{n} of {vocab}x{hidden}", 2 * n * hidden * size + 4 * n,
               lambda dt_=dt_, di=di, dy=dy: isthmus.ops.embedding(di, dt_, out=dy, check=False),
               (lambda table=table, ids=ids, hy=hy: np.take(table, ids, axis=0, out=hy)) if dtype == "float32" else None,
               lambda torch, liger, table=table, ids=ids: _torch_embedding(torch, liger, table, ids))


def _t(torch, a):
    t = torch.from_numpy(np.asarray(a, np.float32) if a.dtype.kind == "V" or a.dtype.name == "bfloat16" else a)
    t = t.cuda()
    return t.to(torch.bfloat16) if a.dtype.name == "bfloat16" else t


def _torch_glu(torch, liger, name, g, u):
    tg, tu = _t(torch, g), _t(torch, u)
    F = torch.nn.functional
    if not liger:
        return (lambda: F.silu(tg) * tu) if name == "silu" else (lambda: F.gelu(tg, approximate="tanh") * tu)
    if name == "silu":
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction

        return lambda: LigerSiLUMulFunction.apply(tg, tu)
    from liger_kernel.ops.geglu import LigerGELUMulFunction

    return lambda: LigerGELUMulFunction.apply(tg, tu)


def _torch_rope(torch, liger, q, k, pos, inv):
    tq, tk = _t(torch, q), _t(torch, k)
    tpos, tinv = torch.from_numpy(pos).cuda(), torch.from_numpy(inv).cuda()
    if not liger:
        def hf():  # LlamaRotaryEmbedding.forward + apply_rotary_pos_emb, on (tokens, heads, head_dim)
            freqs = tpos.float()[:, None] * tinv[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(tq.dtype)[:, None], emb.sin().to(tq.dtype)[:, None]

            def rot(x):
                h = x.shape[-1] // 2
                return torch.cat((-x[..., h:], x[..., :h]), dim=-1)
            return tq * cos + rot(tq) * sin, tk * cos + rot(tk) * sin
        return hf
    from liger_kernel.ops.rope import LigerRopeFunction

    # Liger's layout: (batch, heads, seq, head_dim), cos/sin (1, seq, head_dim)
    lq, lk = tq.permute(1, 0, 2).unsqueeze(0).contiguous(), tk.permute(1, 0, 2).unsqueeze(0).contiguous()
    freqs = tpos.float()[:, None] * tinv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(tq.dtype)[None], emb.sin().to(tq.dtype)[None]
    return lambda: LigerRopeFunction.apply(lq, lk, cos, sin)


def _torch_embedding(torch, liger, table, ids):
    if liger:
        return None  # (no Liger embedding kernel)
    tt, ti = _t(torch, table), torch.from_numpy(ids.astype(np.int64)).cuda()
    return lambda: torch.nn.functional.embedding(ti, tt)


def _cuda_ms(torch, fn, rounds: int = 7) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    reps = max(1, min(200, int(20.0 / max(start.elapsed_time(end), 1e-3))))
    times = []
    for _ in range(rounds):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return statistics.median(times)


def _peers():
    """(torch, whether Liger Kernel imports) on a CUDA machine; (None, False) elsewhere."""
    try:
        import torch
    except ImportError:
        return None, False
    if not torch.cuda.is_available():
        return None, False
    try:
        import liger_kernel.ops.swiglu  # noqa: F401
    except ImportError:
        return torch, False
    return torch, True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", action="append", default=None, help="float32 (default; the GPU also bfloat16)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=0.5, help="CPU: seconds of timed calls per case and side (about)")
    p.add_argument("--quick", action="store_true", help="one small case per op (a smoke test, not a measurement)")
    p.add_argument("--out", default=None, help="folder for pointwise-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    gpu = dev.kind == "gpu"
    sizes = QUICK if args.quick else GPU if gpu else CPU
    dtypes = args.dtype or (["float32", "bfloat16"] if gpu else ["float32"])
    torch, liger = _peers() if gpu else (None, False)
    copy = measure.copy_bandwidth(dev, 1 << 20 if args.quick else None)
    rng = np.random.default_rng(0)
    rows = []
    for dtype in dtypes:
        for op, label, nbytes, ours, numpy_fn, torch_maker in cases(dev, rng, sizes, dtype):
            row = {"op": op, "dtype": dtype, "size": label, "bytes": nbytes}
            if gpu:
                row["isthmus_ms"] = measure.device_ms(dev, ours, repeat=args.rounds, batch=20)
                for name, use_liger in (("torch", False), ("liger", True)):
                    fn = None if torch is None or (use_liger and not liger) else torch_maker(torch, use_liger)
                    if fn is not None:
                        row[f"{name}_ms"] = _cuda_ms(torch, fn, args.rounds)
            elif numpy_fn is not None:
                t = pair(ours, numpy_fn, dev.synchronize, 2 if args.quick else args.rounds,
                         0.01 if args.quick else args.budget)
                row["isthmus_ms"], row["numpy_ms"] = t["isthmus"]["wall"] * 1e3, t["numpy"]["wall"] * 1e3
                row["least_ratio"] = t["numpy"]["least"] / t["isthmus"]["least"]
            else:
                row["isthmus_ms"] = measure.host_times(ours, args.rounds, 1, dev.synchronize).median
            row["GBs"] = nbytes / row["isthmus_ms"] / 1e6
            row["copy_pct"] = 100 * row["GBs"] / copy
            peers = [row[k] for k in ("numpy_ms", "torch_ms", "liger_ms") if k in row]
            row["vs_best_peer"] = min(peers) / row["isthmus_ms"] if peers else None
            rows.append(row)
            print(f"{op} {dtype} {label}: {row['GBs']:.3g} GB/s ({row['copy_pct']:.0f}% of copy)"
                  + (f", {row['vs_best_peer']:.2f}x the fastest peer" if peers else ""), flush=True)
    peer_names = ["NumPy"] if not gpu else ["torch", "Liger"]
    report = measure.Report("pointwise", f"rope, silu_mul, gelu_mul, embedding on {dev.name} ({dev.backend})", dev,
                            data={"rows": rows, "copy_GBs": copy},
                            notes=[f"copy bandwidth {copy:.4g} GB/s (read + write) in this run",
                                   f"NumPy {np.__version__}" if not gpu else
                                   f"torch {getattr(torch, '__version__', 'not importable')}, Liger "
                                   f"{'importable' if liger else 'not importable'}"])
    cols = ["op", "dtype", "size", "isthmus ms", "GB/s", "% of copy",
            *[f"{n} ms" for n in peer_names], "fastest peer / isthmus"]
    report.add_table(cols, [[r["op"], r["dtype"], r["size"], f"{r['isthmus_ms']:.4g}", f"{r['GBs']:.3g}",
                             f"{r['copy_pct']:.0f}%",
                             *[f"{r[k]:.4g}" if k in r else "-" for k in
                               (["numpy_ms"] if not gpu else ["torch_ms", "liger_ms"])],
                             f"{r['vs_best_peer']:.2f}x" if r["vs_best_peer"] else "-"] for r in rows])
    report.add_text("fastest peer / isthmus: the fastest peer's time over isthmus's (above 1: isthmus is faster). "
                    "CPU: median wall time per call over alternating rounds on a shared machine.")
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
