"""Attention ops (issue 28) next to their peers in one run: on PoCL next to NumPy (small shapes);
on a CUDA device, when torch is importable, next to torch's scaled_dot_product_attention (prefill,
decode with GQA, causal at the linear-attention shape) and a paged-attention reference written in
torch (gather the pages, then SDPA).

    python -m benchmarks attention [--device opencl:0] [--quick] [--out DIR] [--run QUESTION]

Times: wall clock per call (a few calls then a wait for the device, median of rounds). Prefill
and linear attention in TFLOP/s (4*B*H*Sq*Sk*D; causal counted in full, as SDPA's anchors are), decode
in GB/s of the KV cache read.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure
from isthmus.ops.specs import attention as A
from isthmus.ops.specs import decode_attention as D
from isthmus.ops.specs import linear_attention as L

SMOKE = ["--quick", "--out", "{out}"]


def _time(fn, sync, rounds: int, reps: int) -> float:
    fn()
    sync()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / reps)
    return statistics.median(ts)


def _cases(quick: bool, gpu: bool):
    """(name, kind, shape dict)."""
    if gpu:
        return [("prefill causal", "prefill", dict(b=4, s=4096, h=32, kvh=32, d=128, causal=True)),
                ("prefill", "prefill", dict(b=4, s=4096, h=32, kvh=32, d=128, causal=False)),
                *[(f"decode B{b} L{L_}", "decode", dict(b=b, L=L_, h=32, kvh=4, d=128)) for b, L_ in
                  ((1, 32768), (16, 8192), (64, 4096))],
                *[(f"paged B{b} L{L_}", "paged", dict(b=b, L=L_, h=32, kvh=4, d=128)) for b, L_ in
                  ((1, 32768), (16, 8192), (64, 4096))],
                ("linear causal", "linear", dict(b=1, s=32768, h=32, d=128))]
    if quick:
        return [("prefill causal", "prefill", dict(b=1, s=32, h=2, kvh=1, d=16, causal=True)),
                ("decode", "decode", dict(b=2, L=64, h=4, kvh=2, d=16)),
                ("paged", "paged", dict(b=2, L=64, h=4, kvh=2, d=16)),
                ("linear causal", "linear", dict(b=1, s=64, h=2, d=16))]
    return [("prefill causal", "prefill", dict(b=1, s=256, h=4, kvh=2, d=64, causal=True)),
            ("prefill", "prefill", dict(b=1, s=256, h=4, kvh=2, d=64, causal=False)),
            ("decode", "decode", dict(b=4, L=2048, h=8, kvh=2, d=64)),
            ("paged", "paged", dict(b=4, L=2048, h=8, kvh=2, d=64)),
            ("linear causal", "linear", dict(b=1, s=1024, h=4, d=64))]


def _inputs(dev, kind, c, dtype, rng):
    f = lambda *s: rng.standard_normal(s).astype(dtype)  # noqa: E731
    if kind == "prefill":
        host = (f(c["b"], c["s"], c["h"], c["d"]), f(c["b"], c["s"], c["kvh"], c["d"]), f(c["b"], c["s"], c["kvh"], c["d"]))
        bufs = [dev.asarray(x) for x in host]
        return host, lambda: A.attention(*bufs, causal=c["causal"]), lambda: A.reference(np, *host, causal=c["causal"])
    if kind == "linear":
        host = tuple(f(c["b"], c["s"], c["h"], c["d"]) for _ in "qkv")
        bufs = [dev.asarray(x) for x in host]
        return host, lambda: L.linear_attention(*bufs), lambda: L.reference(np, *host)
    lengths = np.full(c["b"], c["L"], np.int32)
    q, k, v = f(c["b"], 1, c["h"], c["d"]), f(c["b"], c["L"], c["kvh"], c["d"]), f(c["b"], c["L"], c["kvh"], c["d"])
    if kind == "decode":
        host = (q, k, v, lengths)
        bufs = [dev.asarray(x) for x in host]
        return host, lambda: D.decode_attention(*bufs), lambda: D.reference(np, *host)
    mp = c["L"] // 16
    table = rng.permutation(c["b"] * mp).reshape(c["b"], mp).astype(np.int32)
    kp, vp = np.empty((c["b"] * mp, 16, c["kvh"], c["d"]), dtype), np.empty((c["b"] * mp, 16, c["kvh"], c["d"]), dtype)
    kp[table.ravel()], vp[table.ravel()] = k.reshape(-1, 16, c["kvh"], c["d"]), v.reshape(-1, 16, c["kvh"], c["d"])
    host = (q, kp, vp, table, lengths)
    bufs = [dev.asarray(x) for x in host]
    return host, lambda: D.paged_decode_attention(*bufs), lambda: D.paged_reference(np, *host)


def _work(kind, c, itemsize):
    if kind == "prefill":
        return 4 * c["b"] * c["h"] * c["s"] ** 2 * c["d"], "TFLOP/s"
    if kind == "linear":
        return 4 * c["b"] * c["s"] * c["h"] * c["d"] ** 2, "TFLOP/s"
    return 2 * c["b"] * c["L"] * c["kvh"] * c["d"] * itemsize, "GB/s"


def _torch_peers(kind, c, host) -> list:
    """[(name, fn returning the output)]: torch SDPA (its default choice, then its flash and cuDNN
    backends where they run the shape) on the same data; paged: a torch reference (gather the
    pages, then SDPA). Empty without torch or CUDA."""
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    t = lambda x: torch.from_numpy(np.asarray(x, np.float32)).cuda().to(torch.bfloat16)  # noqa: E731

    def backends(call) -> list:
        out = [("torch SDPA", call)]
        for name, be in (("SDPA flash", SDPBackend.FLASH_ATTENTION), ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)):
            def fn(be=be):
                with sdpa_kernel([be]):
                    return call()
            try:
                fn()
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - the backend does not run this shape
                continue
            out.append((name, fn))
        return out

    if kind in ("prefill", "linear"):
        q, k, v = (t(x).transpose(1, 2) for x in host[:3])  # (b, h, s, d) views of the (b, s, h, d) data
        causal = c.get("causal", True)
        gqa = q.shape[1] != k.shape[1]
        return backends(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa))
    q = t(host[0]).transpose(1, 2)
    if kind == "decode":
        k, v = (t(x).transpose(1, 2) for x in host[1:3])
        return backends(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    kp, vp, table = t(host[1]), t(host[2]), torch.from_numpy(host[3]).cuda().long()

    def paged():
        k = kp[table].reshape(c["b"], -1, c["kvh"], c["d"]).transpose(1, 2)
        v = vp[table].reshape(c["b"], -1, c["kvh"], c["d"]).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    return [("torch paged (gather + SDPA)", paged)]


def _torch_out(out):
    """A peer's output (b, h, s, d) as (b, s, h, d) float64 NumPy."""
    return out.transpose(1, 2).float().cpu().numpy().astype(np.float64)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="one small case per op (a smoke test, not a measurement)")
    p.add_argument("--out", default=None, help="folder for attention-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    gpu = dev.kind == "gpu"
    dtype = isthmus.dtypes.lookup("bfloat16").np if gpu else np.float32
    rng = np.random.default_rng(0)
    rows = []
    for name, kind, c in _cases(args.quick, gpu):
        host, ours, ref = _inputs(dev, kind, c, dtype, rng)
        got = np.asarray(ours().to_numpy(), np.float64)
        rounds, reps = (2, 1) if args.quick else (args.rounds, 3)
        t_ours = _time(ours, dev.synchronize, rounds, reps)
        work, unit = _work(kind, c, np.dtype(dtype).itemsize)
        scale = 1e12 if unit == "TFLOP/s" else 1e9
        row = {"case": name, "shape": c, "unit": unit, "isthmus": work / t_ours / scale, "isthmus_ms": t_ours * 1e3}
        peers = _torch_peers(kind, c, host) if gpu else []
        if peers:
            import torch
            for i, (pname, fn) in enumerate(peers):
                rate = work / _time(fn, torch.cuda.synchronize, rounds, reps) / scale
                row.setdefault("peers", {})[pname] = rate
                if i == 0:  # the ratio is to SDPA's own choice (the anchors)
                    row["peer"], row["peer_name"] = rate, pname
                    if kind != "linear":  # (linear attention's peer is softmax attention: no like result)
                        want = _torch_out(fn()).reshape(got.shape)
                        row["error"] = float(np.max(np.abs(got - want)))
        elif not gpu:
            want = np.asarray(ref(), np.float64)
            row["error"] = float(np.max(np.abs(got - want)))
            row["peer"], row["peer_name"] = work / _time(ref, lambda: None, rounds, 1) / scale, "NumPy"
        if "peer" in row:
            row["ratio"] = row["isthmus"] / row["peer"]
        rows.append(row)
        print(f"{name} {c}: {row['isthmus']:.3g} {unit}" + (f", {row['ratio']:.2f}x {row['peer_name']}" if "ratio" in row
                                                            else "") + "".join(f"; {k} {v:.3g}" for k, v in
                                                                               row.get("peers", {}).items())
              + (f"; max abs diff {row['error']:.2g}" if "error" in row else ""), flush=True)
    report = measure.Report("attention", f"Attention ops on {dev.name} ({dev.backend})", dev, data={"rows": rows},
                            notes=[f"dtype {np.dtype(dtype).name}; NumPy {np.__version__}"])
    report.add_table(["case", "shape", "isthmus", "peer", "isthmus / peer", "max abs error", "other peers"],
                     [[r["case"], " ".join(f"{k}={v}" for k, v in r["shape"].items()), f"{r['isthmus']:.3g} {r['unit']}",
                       f"{r['peer']:.3g} ({r['peer_name']})" if "peer" in r else "-",
                       f"{r['ratio']:.2f}x" if "ratio" in r else "-",
                       f"{r['error']:.1e}" if "error" in r else "-",
                       "; ".join(f"{k} {v:.3g}" for k, v in r.get("peers", {}).items()) or "-"] for r in rows])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    # (GPU: bfloat16 next to torch's bfloat16 result; CPU: float32 next to NumPy's)
    return 0 if all(r.get("error", 0) < (6e-2 if gpu else 1e-3) for r in rows) else 1
