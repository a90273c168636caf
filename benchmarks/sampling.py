"""argmax, top_k (k = 50) and sample over rows of vocabulary width, next to NumPy on the CPU and
torch on a CUDA device, in the same run.

    python -m benchmarks sampling --device opencl:0 [--run sampling-pocl]      # PoCL: NumPy alongside
    python -m benchmarks sampling --device cuda:0 [--run sampling-h200]        # torch alongside
    python -m benchmarks sampling --quick                                      # smoke test

Rows 1, 8, 64 and 4096 of 128256 columns on a GPU (1, 8, 64 and 256 on a CPU), float32 (and
bfloat16 on a GPU). isthmus: device time per call (events around the op, median of repeats), what
``isthmus.ops`` resolves to. Peers on the same data: NumPy (``argmax``; ``argpartition`` then a sort
of the k; softmax, cumulative sum and a search of one uniform per row), host time per call; torch
(``argmax``, ``topk``, ``multinomial`` after ``softmax``), CUDA events. GB/s counts one read of the
logits; "of copy" divides it by the device's copy bandwidth (bytes read + written) for the same
bytes; "vs peer" is the peer's time over isthmus's (> 1: isthmus is faster). Sample rows: plain
(temperature 1) and nucleus (top_p 0.9, which runs the top-k select of 1024 candidates first).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import _results

GPU_ROWS = (1, 8, 64, 4096)
CPU_ROWS = (1, 8, 64, 256)
COLS = 128256
K = 50
SMOKE = ["--quick", "--out", "{out}"]


def _numpy(op: str, x: np.ndarray, u: np.ndarray):
    if op == "argmax":
        return np.argmax(x, axis=-1)
    if op == "top_k":
        part = np.argpartition(-x, K, axis=-1)[:, :K]
        vals = np.take_along_axis(x, part, -1)
        order = np.argsort(-vals, axis=-1, kind="stable")
        return np.take_along_axis(vals, order, -1), np.take_along_axis(part, order, -1)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    cdf = np.cumsum(e, axis=-1)
    if op == "sample top_p":  # the nucleus: sort, keep, draw
        order = np.argsort(-e, axis=-1)
        se = np.take_along_axis(e, order, -1)
        c = np.cumsum(se, axis=-1)
        keep = (c - se < 0.9 * c[:, -1:]).sum(-1)
        kept = np.take_along_axis(c, (keep - 1)[:, None], -1)
        return np.take_along_axis(order, ((c < u[:, None] * kept).sum(-1))[:, None], -1)
    return (cdf < u[:, None] * cdf[:, -1:]).sum(-1)


def _torch(op: str, xt):
    import torch

    if op == "argmax":
        return lambda: torch.argmax(xt, dim=-1)
    if op == "top_k":
        return lambda: torch.topk(xt, K, dim=-1)
    if op == "sample top_p":
        def nucleus():
            p = torch.softmax(xt.float(), dim=-1)
            sp, si = torch.sort(p, dim=-1, descending=True)
            c = torch.cumsum(sp, dim=-1)
            sp[(c - sp) >= 0.9] = 0
            return si.gather(-1, torch.multinomial(sp, 1))
        return nucleus
    return lambda: torch.multinomial(torch.softmax(xt.float(), dim=-1), 1)


def _isthmus(op: str, x, out):
    import isthmus

    if op == "argmax":
        return lambda: isthmus.ops.argmax(x, out=out["idx"])
    if op == "top_k":
        return lambda: isthmus.ops.top_k(x, K, out=(out["val"], out["topi"]))
    if op == "sample top_p":
        return lambda: isthmus.ops.sample(x, top_p=0.9, seed=1, offsets=0, out=out["idx"])
    return lambda: isthmus.ops.sample(x, seed=1, offsets=0, out=out["idx"])


OPS = ("argmax", "top_k", "sample", "sample top_p")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true", help="rows 1 and 8 of 4096 columns (a smoke test)")
    p.add_argument("--rows", default=None, help="comma-separated row counts (default: by the device's kind)")
    p.add_argument("--cols", type=int, default=COLS)
    p.add_argument("--dtypes", default=None, help="comma-separated (default float32; float32,bfloat16 on a GPU)")
    p.add_argument("--out", default=None, help="folder for sampling-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    args = p.parse_args(argv)

    import isthmus
    from isthmus import measure

    dev = isthmus.device(args.device)
    gpu = dev.kind == "gpu"
    cols = 4096 if args.quick else args.cols
    rows_list = (1, 8) if args.quick else tuple(int(r) for r in args.rows.split(",")) if args.rows else (
        GPU_ROWS if gpu else CPU_ROWS)
    dtypes = args.dtypes.split(",") if args.dtypes else (["float32", "bfloat16"] if gpu and not args.quick
                                                          else ["float32"])
    repeat = 3 if args.quick else 10 if gpu else 5
    try:
        import torch
        has_torch = torch.cuda.is_available() and gpu
    except ImportError:
        torch, has_torch = None, False
    rng = np.random.default_rng(0)
    t0 = time.monotonic()
    rows_out, copies = [], {}
    for dtype in dtypes:
        for rows in rows_list:
            host = rng.standard_normal((rows, cols), dtype=np.float32)
            if dtype != "float32":
                import ml_dtypes
                host = host.astype(ml_dtypes.bfloat16)
            nbytes = host.nbytes
            copies[nbytes] = copy = copies.get(nbytes) or measure.copy_bandwidth(dev, max(nbytes, 1 << 20))
            x = dev.asarray(host)
            out = {"idx": dev.empty((rows,), np.int32), "val": dev.empty((rows, K), host.dtype),
                   "topi": dev.empty((rows, K), np.int32)}
            xt = torch.as_tensor(host.astype(np.float32), device="cuda").to(
                torch.bfloat16 if dtype == "bfloat16" else torch.float32) if has_torch else None
            u = rng.random(rows)
            h32 = host.astype(np.float32)
            for op in OPS[:3] if args.quick else OPS:  # (quick: three builds, no 1024-candidate one)
                row = {"op": op, "dtype": dtype, "size": f"{rows}x{cols}"}
                fn = _isthmus(op, x, out)
                ms = measure.device_ms(dev, fn, repeat=repeat, warmup=2)
                row.update(ms=ms, GBps=nbytes / ms / 1e6, of_copy=nbytes / ms / 1e6 / copy)
                if op == "argmax":
                    row["ok"] = bool((out["idx"].to_numpy() == np.argmax(h32, -1)).all())
                elif op == "top_k":
                    row["ok"] = bool((out["val"].to_numpy().astype(np.float32) == -np.sort(-h32, -1)[:, :K]).all())
                else:
                    got = out["idx"].to_numpy()
                    row["ok"] = bool(((got >= 0) & (got < cols)).all())
                if has_torch:
                    row["peer"] = "torch"
                    row["peer_ms"] = measure.device_ms(measure.TorchClock(torch), _torch(op, xt), repeat=repeat,
                                                       warmup=3)
                elif not gpu:
                    row["peer"] = "numpy"
                    times = []
                    for _ in range(max(2, repeat // 2)):
                        t = time.perf_counter()
                        _numpy(op, h32, u)
                        times.append((time.perf_counter() - t) * 1e3)
                    row["peer_ms"] = float(np.median(times))
                if "peer_ms" in row:
                    row["vs_peer"] = row["peer_ms"] / ms
                rows_out.append(row)
                # (as it goes: a run cut short by its time limit still shows its rows)
                print(f"{op} {dtype} {rows}x{cols}: {ms:.4f} ms, {row['of_copy']:.0%} of copy"
                      + (f", {row['peer']} {row['vs_peer']:.2f}x" if "vs_peer" in row else "")
                      + ("" if row["ok"] else " WRONG"), file=sys.stderr, flush=True)
            x.close()
            for b in out.values():
                b.close()
    doc = {"identity": dev.identity(), "copy_GBps": {str(k): v for k, v in copies.items()}, "repeat": repeat,
           "seconds": time.monotonic() - t0, "rows": rows_out, "torch": getattr(torch, "__version__", None)}
    d = doc["identity"]
    peer = "torch" if has_torch else "NumPy (host)" if not gpu else "none (no torch on a CUDA device)"
    report = measure.Report("sampling", f"argmax, top_k, sample on {d['name']} ({d['backend']}, driver "
                            f"{d['driver']})", dev, data=doc, notes=[
                                f"device time per call, median of {repeat}; GB/s: one read of the logits; of copy: "
                                f"over the device's copy bandwidth; peer: {peer}, same data; vs peer: peer time / "
                                f"isthmus time (> 1: isthmus faster); k = {K}; sample top_p: top_p = 0.9."])
    report.add_table(["op", "dtype", "size", "ms", "GB/s", "of copy", "peer", "peer ms", "vs peer", "ok"],
                     [[r["op"], r["dtype"], r["size"], f"{r['ms']:.4f}", f"{r['GBps']:.1f}", f"{r['of_copy']:.0%}",
                       r.get("peer", "-"), f"{r['peer_ms']:.4f}" if "peer_ms" in r else "-",
                       f"{r['vs_peer']:.2f}x" if "vs_peer" in r else "-", "ok" if r["ok"] else "WRONG"]
                      for r in rows_out])
    print(report.markdown())
    _results.write(report, args.out, run=args.run)
    print(f"{len(rows_out)} rows in {doc['seconds']:.0f} s", file=sys.stderr)
    return 0 if all(r["ok"] for r in rows_out) else 1


if __name__ == "__main__":
    sys.exit(main())
