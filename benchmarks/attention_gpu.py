"""Attention at issue 28's shapes on an NVIDIA GPU, next to torch in the same process (bfloat16):

- prefill B4 S4096 H32 D128, causal and not: TFLOP/s (4*B*H*S^2*D, causal counted in full as the
  issue's anchors are) of isthmus (its tensor-core path where the device has mma.sync) next to
  torch SDPA (its own choice, then its flash and cuDNN backends); ``--sweep``: the tensor-core
  path's configs one by one (forced), to set its rule;
- decode, GQA 8 (32 query heads over 4 kv heads), head dim 128, at batch 1/16/64 (the issue's
  anchors B1 L32768, B16 L8192, B64 L4096 and KV caches of 1 GiB: B1 L524288, B16 L32768,
  B64 L8192): GB/s of the cache read, contiguous and paged (16-token pages in a shuffled order),
  next to SDPA (contiguous) and a torch paged reference (gather the pages, then SDPA), and the copy
  ceiling (torch's copy of a buffer the cache's size: bytes read + written per second);
- cascade: a shared prefix of 8192 tokens, 64 sequences of 512 own: the prefix once for all 64
  queries (attention, lse), each sequence's own keys (decode_attention, lse), merged
  (merge_attention_states), next to the plain batched decode of the same 64 x 8704 keys;
- linear attention, causal, B1 S32768 H32 D128 next to SDPA's causal attention, and its recurrent
  step (one token, the state updated in place) in GB/s of the state read and written.

Every isthmus result is compared with torch's (max abs difference printed).

    python -m benchmarks attention_gpu --device cuda:0 [--only prefill,decode,cascade,linear] [--sweep] --out DIR
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure

SMOKE = "needs an NVIDIA GPU with torch (CUDA) and GiB-sized inputs; benchmarks/attention.py is the portable one"

H, KVH, D = 32, 4, 128
SWEEP = [dict(WARPS=4, MI=1, BKV=64, STAGES=2, QREG=1), dict(WARPS=4, MI=1, BKV=64, STAGES=3, QREG=1),
         dict(WARPS=8, MI=1, BKV=64, STAGES=2, QREG=1), dict(WARPS=8, MI=1, BKV=64, STAGES=3, QREG=1),
         dict(WARPS=4, MI=1, BKV=32, STAGES=3, QREG=1), dict(WARPS=4, MI=1, BKV=128, STAGES=2, QREG=0),
         dict(WARPS=4, MI=2, BKV=32, STAGES=2, QREG=0), dict(WARPS=4, MI=1, BKV=64, STAGES=2, QREG=0),
         dict(WARPS=8, MI=1, BKV=32, STAGES=4, QREG=1), dict(WARPS=2, MI=1, BKV=64, STAGES=3, QREG=1)]


def _time(fn, sync, rounds: int = 5, reps: int = 5) -> float:
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


class Bench:
    def __init__(self, dev, rounds: int):
        import torch

        self.torch, self.dev, self.rounds = torch, dev, rounds
        self.rows: list[dict] = []
        self.gen = torch.Generator(device="cuda").manual_seed(0)

    def rand(self, *shape):
        return self.torch.randn(*shape, device="cuda", dtype=self.torch.bfloat16, generator=self.gen)

    def buf(self, t):
        """An isthmus buffer of torch tensor t: the same memory on CUDA, a copy on OpenCL."""
        if self.dev.backend == "cuda":
            return isthmus.asarray(t.contiguous(), self.dev.id)
        import ml_dtypes

        host = t.contiguous().view(self.torch.int16).cpu().numpy()
        return self.dev.asarray(host.view(ml_dtypes.bfloat16) if t.dtype == self.torch.bfloat16 else host)

    def host(self, b) -> np.ndarray:
        return np.asarray(b.to_numpy(), np.float64)

    def ours(self, fn) -> float:
        return _time(fn, self.dev.synchronize, self.rounds)

    def theirs(self, fn) -> float:
        return _time(fn, self.torch.cuda.synchronize, self.rounds)

    def add(self, section, case, unit, value, peers: dict, diff=None, note=""):
        row = {"section": section, "case": case, "unit": unit, "isthmus": value, "peers": peers, "diff": diff,
               "note": note}
        first = next(iter(peers.items()), None)
        if first:
            row["ratio"] = value / first[1]
        self.rows.append(row)
        print(f"[{section}] {case}: {value:.4g} {unit}" + "".join(f"; {k} {v:.4g}" for k, v in peers.items())
              + (f"; {row['ratio']:.2f}x {first[0]}" if first else "") + (f"; max abs diff {diff:.2g}" if diff is not None else "")
              + (f"; {note}" if note else ""), flush=True)

    def sdpa(self, q, k, v, causal):
        """[(name, fn)]: SDPA's own choice, its flash and cuDNN backends (where they run)."""
        torch = self.torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        gqa = q.shape[1] != k.shape[1]
        call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)  # noqa: E731
        out = [("SDPA", call)]
        for name, be in (("SDPA flash", SDPBackend.FLASH_ATTENTION), ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION)):
            def fn(be=be):
                with sdpa_kernel([be]):
                    return call()
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - that backend does not run this shape
                print(f"  ({name} does not run {tuple(q.shape)} causal={causal}: {str(exc).splitlines()[0][:100]})")
                continue
            out.append((name, fn))
        return out

    # ---- prefill ---------------------------------------------------------------------------
    def prefill(self, sweep: bool, b=4, s=4096, kvh=H, d=D):
        from isthmus.ops.resolve import forced
        from isthmus.ops.specs.attention import MMA, attention

        q, k, v = self.rand(b, s, H, d), self.rand(b, s, kvh, d), self.rand(b, s, kvh, d)
        qb, kb, vb = self.buf(q), self.buf(k), self.buf(v)
        flops = 4 * b * H * s * s * d
        for causal in (False, True):
            peers = self.sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal)
            rates = {n: flops / self.theirs(fn) / 1e12 for n, fn in peers}
            want = peers[0][1]().transpose(1, 2).float().cpu().numpy()
            got = attention(qb, kb, vb, causal=causal)
            diff = float(np.max(np.abs(self.host(got) - want)))
            name = f"B{b} S{s} H{H}/{kvh} D{d}" + (" causal" if causal else "")
            self.add("prefill", name, "TFLOP/s", flops / self.ours(lambda: attention(qb, kb, vb, causal=causal)) / 1e12,
                     rates, diff)
            if sweep:
                problem = {"batch": b, "seq_q": s, "seq_k": s, "heads": H, "kv_heads": kvh, "head_dim": d}
                for cfg in SWEEP:
                    if not MMA.is_valid(cfg, self.dev, problem, isthmus.dtypes.lookup("bfloat16")):
                        continue
                    with forced(MMA, cfg):
                        try:
                            got = attention(qb, kb, vb, causal=causal)
                            diff = float(np.max(np.abs(self.host(got) - want)))
                            rate = flops / self.ours(lambda: attention(qb, kb, vb, causal=causal)) / 1e12
                        except Exception as exc:  # noqa: BLE001 - say which config failed, go on
                            print(f"  {cfg}: {type(exc).__name__}: {str(exc)[:200]}")
                            continue
                    self.add("prefill sweep", name + " " + " ".join(f"{k_}={v_}" for k_, v_ in cfg.items()),
                             "TFLOP/s", rate, {"SDPA": rates["SDPA"]}, diff)

    # ---- decode ----------------------------------------------------------------------------
    def copy_rate(self, nbytes: int) -> float:
        torch = self.torch
        src = torch.empty(nbytes // 2, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        return 2 * nbytes / self.theirs(lambda: dst.copy_(src)) / 1e9

    def decode(self, shapes):
        from isthmus.ops.specs.decode_attention import decode_attention, paged_decode_attention

        torch = self.torch
        import torch.nn.functional as F
        for b, L in shapes:
            kv_bytes = 2 * b * L * KVH * D * 2
            copy = self.copy_rate(kv_bytes)
            q, k, v = self.rand(b, H, D), self.rand(b, L, KVH, D), self.rand(b, L, KVH, D)
            lengths = torch.full((b,), L, dtype=torch.int32, device="cuda")
            qb, kb, vb, lb = self.buf(q), self.buf(k), self.buf(v), self.buf(lengths)
            peers = self.sdpa(q[:, :, None], k.transpose(1, 2), v.transpose(1, 2), False)
            rates = {n: kv_bytes / self.theirs(fn) / 1e9 for n, fn in peers}
            want = peers[0][1]()[:, :, 0].float().cpu().numpy()
            got = decode_attention(qb, kb, vb, lb)
            diff = float(np.max(np.abs(self.host(got) - want)))
            t = self.ours(lambda: decode_attention(qb, kb, vb, lb))
            rate = kv_bytes / t / 1e9
            self.add("decode", f"contiguous B{b} L{L} ({kv_bytes / 2**30:.2f} GiB)", "GB/s", rate, rates, diff,
                     f"{rate / copy:.0%} of copy ({copy:.0f} GB/s)")
            del k, v, kb, vb
            # paged: the same keys in 16-token pages, shuffled
            ps, mp = 16, L // 16
            perm = torch.randperm(b * mp, device="cuda", generator=self.gen)
            table = perm.reshape(b, mp).to(torch.int32)
            kp, vp = self.rand(b * mp, ps, KVH, D), self.rand(b * mp, ps, KVH, D)
            kpb, vpb, tb = self.buf(kp), self.buf(vp), self.buf(table)
            tl = table.long()

            def paged_ref():
                kk = kp[tl].reshape(b, -1, KVH, D).transpose(1, 2)
                vv = vp[tl].reshape(b, -1, KVH, D).transpose(1, 2)
                return F.scaled_dot_product_attention(q[:, :, None], kk, vv, enable_gqa=True)
            want = paged_ref()[:, :, 0].float().cpu().numpy()
            got = paged_decode_attention(qb, kpb, vpb, tb, lb)
            diff = float(np.max(np.abs(self.host(got) - want)))
            tp = self.ours(lambda: paged_decode_attention(qb, kpb, vpb, tb, lb))
            self.add("decode", f"paged B{b} L{L} page 16", "GB/s", kv_bytes / tp / 1e9,
                     {"torch paged (gather+SDPA)": kv_bytes / self.theirs(paged_ref) / 1e9,
                      "SDPA contiguous": rates["SDPA"]}, diff,
                     f"{kv_bytes / tp / 1e9 / copy:.0%} of copy; paged/contiguous time {tp / t:.3f}")
            del kp, vp, kpb, vpb
            torch.cuda.empty_cache()

    # ---- cascade ---------------------------------------------------------------------------
    def cascade(self, prefix=8192, n=64, own=512):
        from isthmus.ops.resolve import forced
        from isthmus.ops.specs.attention import MMA, attention
        from isthmus.ops.specs.decode_attention import decode_attention

        torch = self.torch
        q = self.rand(n, H, D)
        kp, vp = self.rand(1, prefix, KVH, D), self.rand(1, prefix, KVH, D)
        ko, vo = self.rand(n, own, KVH, D), self.rand(n, own, KVH, D)
        kall = torch.cat([kp.expand(n, -1, -1, -1), ko], 1)
        vall = torch.cat([vp.expand(n, -1, -1, -1), vo], 1)
        qb, kpb, vpb, kob, vob, kab, vab = (self.buf(x) for x in (q, kp, vp, ko, vo, kall, vall))
        l_all = self.buf(torch.full((n,), prefix + own, dtype=torch.int32, device="cuda"))
        l_own = self.buf(torch.full((n,), own, dtype=torch.int32, device="cuda"))
        q4 = qb.reshape(1, n, H, D)

        def casc():
            o_p, lse_p = attention(q4, kpb, vpb, causal=False, return_lse=True)   # (1, n, H, D), (1, H, n)
            o_s, lse_s = decode_attention(qb, kob, vob, l_own, return_lse=True)   # (n, H, D), (n, H)
            lse_t = isthmus.ops.transpose(lse_p.reshape(H, n))                    # (n, H)
            return isthmus.ops.merge_attention_states(o_p.reshape(n, H, D), lse_t, o_s, lse_s)[0]

        def plain():
            return decode_attention(qb, kab, vab, l_all)
        want = self.host(plain())
        t_plain = self.ours(plain)
        for label, cfg in (("default", None), ("prefix WARPS=2", dict(WARPS=2, MI=1, BKV=64, STAGES=3, QREG=1))):
            if cfg is not None and not (self.dev.mma_sync and MMA.is_valid(
                    cfg, self.dev, {"batch": 1, "seq_q": n, "seq_k": prefix, "heads": H, "kv_heads": KVH,
                                    "head_dim": D}, isthmus.dtypes.lookup("bfloat16"))):
                continue
            if cfg is None:
                got, t = self.host(casc()), self.ours(casc)
            else:
                with forced(MMA, cfg):
                    got, t = self.host(casc()), self.ours(casc)
            self.add("cascade", f"prefix {prefix} + {n} x {own} own ({label})", "x plain decode", t_plain / t,
                     {}, float(np.max(np.abs(got - want))),
                     f"cascade {t * 1e6:.0f} us, plain batched decode {t_plain * 1e6:.0f} us")

    # ---- linear attention ------------------------------------------------------------------
    def linear(self, s=32768):
        from isthmus.ops.specs.linear_attention import linear_attention

        torch = self.torch
        q, k, v = self.rand(1, s, H, D), self.rand(1, s, H, D), self.rand(1, s, H, D)
        qb, kb, vb = self.buf(q), self.buf(k), self.buf(v)
        flops = 4 * s * s * H * D  # softmax attention's (causal counted in full), for the comparison
        peers = self.sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), True)
        t_sdpa = self.theirs(peers[0][1])
        t = self.ours(lambda: linear_attention(qb, kb, vb))
        self.add("linear", f"causal B1 S{s} H{H} D{D}", "x SDPA causal", t_sdpa / t, {},
                 note=f"linear {t * 1e3:.2f} ms, SDPA causal {t_sdpa * 1e3:.2f} ms ({flops / t_sdpa / 1e12:.0f} TFLOP/s)")
        # the recurrent step: one token over the state (1, H, D, D+1) float32, updated in place
        _, state = linear_attention(qb, kb, vb, return_state=True)
        q1, k1, v1 = (self.buf(x[:, :1].contiguous()) for x in (q, k, v))
        ts = self.ours(lambda: linear_attention(q1, k1, v1, state=state))
        nbytes = 2 * H * D * (D + 1) * 4
        self.add("linear", "recurrent step (state read + written)", "GB/s", nbytes / ts / 1e9,
                 {"copy of the state's size": self.copy_rate(nbytes // 2)}, note=f"{ts * 1e6:.1f} us a step")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="prefill,decode,cascade,linear")
    p.add_argument("--sweep", action="store_true", help="time the tensor-core prefill's configs one by one")
    p.add_argument("--big", action="store_true", help="decode also at 1 GiB KV caches")
    p.add_argument("--out", default=None)
    _results.add_run_option(p)
    p.add_argument("--tag", default="")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    bench = Bench(dev, args.rounds)
    only = set(args.only.split(","))
    sections = [("prefill", lambda: bench.prefill(args.sweep)),
                ("decode", lambda: bench.decode([(1, 32768), (16, 8192), (64, 4096)]
                                                + ([(1, 524288), (16, 32768), (64, 8192)] if args.big else []))),
                ("cascade", bench.cascade), ("linear", bench.linear)]
    failed = 0
    for name, fn in sections:
        if name in only:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - report it, go on with the next section
                failed += 1
                print(f"[{name}] FAILED: {type(exc).__name__}: {str(exc)[:500]}", flush=True)
    report = measure.Report("attention_gpu", f"Attention at issue 28's shapes on {dev.name} ({dev.backend})", dev,
                            data={"rows": bench.rows}, notes=["bfloat16; times: wall clock of back-to-back calls, "
                                                              "median of rounds"])
    report.add_table(["section", "case", "isthmus", "peers", "isthmus / first peer", "max abs diff", "note"],
                     [[r["section"], r["case"], f"{r['isthmus']:.4g} {r['unit']}",
                       "; ".join(f"{k} {v:.4g}" for k, v in r["peers"].items()) or "-",
                       f"{r['ratio']:.2f}x" if "ratio" in r else "-",
                       f"{r['diff']:.2g}" if r["diff"] is not None else "-", r["note"] or "-"] for r in bench.rows])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
