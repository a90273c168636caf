"""gemm at the shapes of issue 29 and of Llama's linear layers next to torch.mm / torch.bmm (cuBLAS)
in one process (and CLBlast on an OpenCL GPU where CLBLAST_LIB names it), as ratios.

    python -m benchmarks gemm_llama --device cuda:0 --out DIR            # every section
    python -m benchmarks gemm_llama --device cuda:0 --sections skinny --sweep --out DIR
    python -m benchmarks gemm_llama --device opencl:nvidia --sections squares --out DIR
    python -m benchmarks gemm_llama --quick --out DIR                      # smoke test (small sizes)

Sections (``--sections``, comma-separated):
- ``squares``: 16-bit 4096^3 and 8192^3 and f32 4096^3 (``gemm(a, b)``);
- ``skinny``: ``x @ W.T`` (``gemm(x, w, trans_b=True)``) with 1, 8, 16, 32 and 64 rows against the
  weights 4096x4096, 11008x4096, 4096x11008, 14336x4096, 128256x4096 (bfloat16; f32 at 1, 16 and 64
  rows against the first two);
- ``llama``: the linear layers of Llama-3.2-1B (hidden 2048: q/o 2048x2048, k/v 512x2048, gate/up
  8192x2048, down 2048x8192, lm_head 128256x2048) and Llama-3.1-8B (hidden 4096: q/o 4096x4096, k/v
  1024x4096, gate/up 14336x4096, down 4096x14336, lm_head 128256x4096) at 1, 8, 32 and 2048 tokens,
  bfloat16 ``x @ W.T``;
- ``bmm``: f32 batched small gemms (32 x 128x64x128 ... 1024 x 64^3; ``gemm`` of 3-D operands).
``--sweep`` (skinny shapes, bfloat16): the rows kernel's configs and the tiled kernel forced, each
launched directly (no per-call resolution), next to the rule's pick.

Timing: device events (isthmus's own, torch's), each side a batch of back-to-back calls a round, the
sides alternating round by round, the median of ``--rounds``. ratio = torch's time over isthmus's
(above 1: isthmus is faster). % of copy: the bytes a call must move (operands read once, C written
once) per second over a device-to-device copy's rate (read + write), for the memory-bound skinny
shapes. On an OpenCL device torch (when CUDA is there) still runs on CUDA: the ratio is then
against torch on CUDA, as issue 29 states its NVIDIA OpenCL target.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced
from isthmus.ops.specs import gemm_mma
from isthmus.record import recording

SMOKE = ["--quick", "--sweep", "--sweep-bmm", "--out", "{out}"]
WEIGHTS = [(4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096), (128256, 4096)]  # (n, k): W is n x k
ROWS = [1, 8, 16, 32, 64]
LLAMA = {"llama-3.2-1b": {"q/o": (2048, 2048), "k/v": (512, 2048), "gate/up": (8192, 2048), "down": (2048, 8192),
                          "lm_head": (128256, 2048)},
         "llama-3.1-8b": {"q/o": (4096, 4096), "k/v": (1024, 4096), "gate/up": (14336, 4096), "down": (4096, 14336),
                          "lm_head": (128256, 4096)}}
TOKENS = [1, 8, 32, 2048]
BMM = [(32, 128, 128, 64), (256, 64, 64, 64), (1024, 64, 64, 64), (512, 128, 128, 128), (128, 256, 256, 256),
       (64, 256, 128, 256)]  # (batch, m, n, k)
# the rows kernel's configs the sweep forces (with the rule's SPLITK unless given)
SWEEP = [dict(RN=1, RK=8, RU=2), dict(RN=2, RK=8, RU=2), dict(RN=4, RK=8, RU=2), dict(RN=2, RK=4, RU=4),
         dict(RN=4, RK=4, RU=4), dict(RN=2, RK=8, RU=4), dict(RN=1, RK=4, RU=4), dict(RN=2, RK=8, RU=1),
         dict(RN=2, RK=8, RU=2, SPLITK=2), dict(RN=4, RK=8, RU=2, SPLITK=2), dict(RN=2, RK=2, RU=4),
         dict(RN=2, RK=8, RU=2, RP=1), dict(RN=4, RK=4, RU=2, RP=1), dict(RN=2, RK=4, RU=2, RP=1)]


def _np_dtype(dtype: str):
    return lookup(dtype).np


def _host(rng, shape, dtype: str) -> np.ndarray:
    """Random values of ``dtype``; a large array repeats a block of 2^20 (drawing 10^9 normal values
    would take the run's time: the values do not matter to the time)."""
    size = int(np.prod(shape))
    block = (rng.standard_normal(min(size, 1 << 20), dtype=np.float32) * 0.5).astype(_np_dtype(dtype))
    return block.reshape(shape) if block.size == size else np.resize(block, shape)


class Operands:
    """Device copies (isthmus's, torch's) of host arrays, kept while consecutive cases share them
    (the weights of the skinny and Llama cases)."""

    def __init__(self, dev, torch):
        self.dev, self.torch, self.held = dev, torch, {}

    def get(self, rng, name: str, shape: tuple, dtype: str):
        key = (shape, dtype)
        found = self.held.get(name)
        if found is None or found[0] != key:
            if found is not None:
                found[2].close()
            host = _host(rng, shape, dtype)
            tt = self.torch.tensor(host, dtype) if self.torch.torch is not None else None
            found = self.held[name] = (key, host, self.dev.asarray(host), tt)
        return found[1:]

    def close(self):
        for found in self.held.values():
            found[2].close()
        self.held.clear()


class Torch:
    """torch on CUDA (TF32 off), or None where it does not import or has no GPU."""

    def __init__(self):
        self.torch = None
        try:
            import torch

            if torch.cuda.is_available():
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                self.torch = torch
        except ImportError:
            pass

    def tensor(self, host: np.ndarray, dtype: str):
        t = self.torch
        if dtype == "bfloat16":  # the same bits (NumPy has no bfloat16 torch reads)
            return t.from_numpy(np.ascontiguousarray(host).view(np.int16)).to("cuda").view(t.bfloat16)
        return t.from_numpy(np.ascontiguousarray(host)).to("cuda")

    def clock(self):
        return measure.TorchClock(self.torch)


def _batch_for(clock, fn, target_ms: float) -> int:
    """Back-to-back calls a round so that a round takes about ``target_ms``."""
    ms = measure.device_times(clock, fn, repeat=1, warmup=1, batch=1).median
    return max(1, min(200, int(target_ms / max(ms, 1e-4))))


def timed(sides: dict, rounds: int, target_ms: float) -> dict:
    """{name: median ms per call} of sides {name: (clock, fn)}, alternating round by round."""
    rounds_of = {}
    for name, (clock, fn) in sides.items():
        rounds_of[name] = measure.round_of(clock, fn, _batch_for(clock, fn, target_ms))
    return {name: s.median for name, s in measure.interleaved(rounds_of, rounds).items()}


def _config(dev, call) -> str:
    """The tunables the call's first launch was built with (the rows kernel's or the tile's)."""
    with recording(dev) as rec:
        call()  # (into the case's own c)
    dev.synchronize()
    if not rec.launches:
        return "-"
    d = rec.launches[0][0].program.defines
    if d.get("ROWS"):
        keys = ("RM", "RN", "RK", "RU", "RP", "SPLITK")
        return "rows " + " ".join(f"{k}{d[k]}" for k in keys if k in d)
    if "WGMMA" in d:
        keys = ("BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK")
        return ("wgmma " if d.get("WGMMA") else "mma ") + " ".join(f"{k}{d[k]}" for k in keys if k in d)
    if "VARIANT" in d:
        keys = {0: ("TM", "TN", "TK", "WPTM", "WPTN"), 1: ("TM", "TN", "TK", "KS"), 2: ("CM", "CN", "CV", "CR"),
                3: ("RM", "RN", "RW")}.get(d["VARIANT"], ())
        keys = ("VARIANT",) + keys
        return "f32 " + " ".join(f"{k}{d[k]}" for k in keys if k in d)
    return "-"


def run_case(dev, torch: Torch, ops: Operands, rng, section: str, label: str, dtype: str, batch, m: int, n: int,
             k: int, trans_b: bool, rounds: int, target_ms: float, copy_gbs: float) -> dict:
    a_shape = ((batch,) if batch else ()) + (m, k)
    b_shape = ((batch,) if batch else ()) + ((n, k) if trans_b else (k, n))
    ha, da, ta = ops.get(rng, "a", a_shape, dtype)
    hb, db, tb = ops.get(rng, "b", b_shape, dtype)
    c = dev.empty(((batch,) if batch else ()) + (m, n), _np_dtype(dtype))
    ours = lambda: isthmus.ops.gemm(da, db, c, trans_b=trans_b)  # noqa: E731
    config = _config(dev, ours)
    sides = {"isthmus": (dev, ours)}
    if torch.torch is not None:
        tc = torch.torch.empty(((batch,) if batch else ()) + (m, n), dtype=ta.dtype, device="cuda")
        if batch:
            sides["torch"] = (torch.clock(), lambda: torch.torch.bmm(ta, tb.transpose(-1, -2) if trans_b else tb, out=tc))
        else:
            sides["torch"] = (torch.clock(), lambda: torch.torch.mm(ta, tb.t() if trans_b else tb, out=tc))
    t = timed(sides, rounds, target_ms)
    size = lookup(dtype).np.itemsize
    nb = (batch or 1)
    flops = 2 * nb * m * n * k
    nbytes = nb * (m * k + n * k + m * n) * size
    row = {"section": section, "case": label, "dtype": dtype, "batch": batch or 1, "m": m, "n": n, "k": k,
           "trans_b": trans_b, "config": config, "ms": t["isthmus"], "tflops": flops / t["isthmus"] / 1e9,
           "GBs": nbytes / t["isthmus"] / 1e6, "pct_copy": 100 * nbytes / t["isthmus"] / 1e6 / copy_gbs if copy_gbs else None}
    if "torch" in t:
        row["torch_ms"] = t["torch"]
        row["ratio"] = t["torch"] / t["isthmus"]
        row["torch_pct_copy"] = 100 * nbytes / t["torch"] / 1e6 / copy_gbs if copy_gbs else None
    c.close()
    return row


def _direct(dev, dt, a, b, c, params: dict):
    """A call of gemm_mma with ``params`` resolved once (the launch gemm_mma.run makes, without the
    per-call resolution of a forced config): x @ W.T, beta 0."""
    shape = gemm_mma._shape(a, b, False, True)
    variant = gemm_mma._variant(dev, dt, False, True, shape, dt)
    with forced(gemm_mma.SPEC, params):
        kern, g, loc, (m, n, k), (sa, sb, sc), _, _, combine = gemm_mma._steps(dev, dt, shape, variant, dt)
    if combine is None:
        return lambda: dev.launch(kern, g, loc, [m, n, k, 1.0, 0.0, a, sa, b, sb, c, sc])
    ckern, cg, cloc, (mn, batch), pbytes = combine

    def call():
        with gemm_mma.partials(dev, pbytes) as part:
            dev.launch(kern, g, loc, [m, n, k, 1.0, 0.0, a, sa, b, sb, part, sc])
            dev.launch(ckern, cg, cloc, [mn, batch, 1.0, 0.0, part, c])
    return call


def sweep(dev, rng, rows: list, weights: list, rounds: int, target_ms: float, copy_gbs: float, quick=False) -> list:
    """The rows kernel's configs and the tiled kernel (the rule's skinny tile) forced at x @ W.T."""
    dt, out = lookup("bfloat16"), []
    tb = gemm_mma.SPEC.variant(trans_b=True)
    for n, k in weights:
        hb = _host(rng, (n, k), "bfloat16")
        b = dev.asarray(hb)
        cols = np.sort(rng.choice(n, min(n, 512), replace=False))  # the error on a sample of C's columns
        wcols = hb[cols].astype(np.float32)
        for m in rows:
            ha = _host(rng, (m, k), "bfloat16")
            a, c = dev.asarray(ha), dev.empty((m, n), dt.np)
            ref = ha.astype(np.float32) @ wcols.T
            problem = {"m": m, "n": n, "k": k}
            rule = tb.defaults(dev, problem, dt)
            tiled = {kk: v for kk, v in gemm_mma.SPEC.defaults(dev, problem, dt).items()}  # the plain rule: tiles
            cands = {"tiled " + " ".join(f"{kk}{tiled[kk]}" for kk in ("BM", "BN", "BK", "STAGES", "SPLITK")): dict(tiled, ROWS=0)}
            for p in SWEEP[:3] if quick else SWEEP:
                full = dict({t.name: t.default for t in tb.tunables}, ROWS=1, RM=min(64, max(16, 1 << (m - 1).bit_length())), SPLITK=rule.get("SPLITK", 1))
                full.update(p)
                if not tb.is_valid(full, dev, problem, dt):
                    continue
                cands["rows " + " ".join(f"{kk}{full[kk]}" for kk in ("RM", "RN", "RK", "RU", "RP", "SPLITK"))] = full
            sides = {}
            for name, p in cands.items():
                try:
                    fn = _direct(dev, dt, a, b, c, p)
                    fn()
                    got = c.to_numpy()[:, cols].astype(np.float32)
                    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                    if not err < 1e-2:
                        print(f"  sweep {m}x{n}x{k} {name}: WRONG (error {err:.3g})", flush=True)
                        continue
                    sides[name] = (dev, fn)
                except Exception as exc:  # noqa: BLE001 - a config that fails to build is reported, not fatal
                    print(f"  sweep {m}x{n}x{k} {name}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            t = timed(sides, rounds, target_ms) if sides else {}
            nbytes = (m * k + n * k + m * n) * 2
            best = min(t, key=t.get) if t else None
            for name, ms in sorted(t.items(), key=lambda kv: kv[1]):
                out.append({"m": m, "n": n, "k": k, "config": name, "ms": ms, "pct_copy": 100 * nbytes / ms / 1e6 / copy_gbs,
                            "best": name == best})
            if t:
                print(f"sweep {m}x{n}x{k}: " + ", ".join(f"{nm} {ms * 1e3:.1f}us" for nm, ms in sorted(t.items(), key=lambda kv: kv[1])[:4]),
                      flush=True)
            for x in (a, c):
                x.close()
        b.close()
    return out


BMM_TILES = [(16, 32, 2, 4, 16), (32, 32, 2, 2, 16), (32, 32, 4, 4, 16), (32, 64, 4, 4, 16), (64, 64, 4, 4, 16),
             (64, 64, 8, 8, 16), (64, 128, 8, 8, 16), (128, 128, 8, 8, 16), (32, 32, 4, 4, 8), (32, 32, 4, 4, 32),
             (64, 64, 4, 4, 32), (64, 128, 4, 8, 16)]  # (TM, TN, WPTM, WPTN, TK) of the f32 tiled kernel


def sweep_bmm(dev, rng, shapes: list, rounds: int, target_ms: float) -> list:
    """The f32 tiled kernel's tiles forced at batched small gemms (launched directly)."""
    from isthmus.ops.specs import gemm as G

    f32, out = lookup("float32"), []
    for batch, m, n, k in shapes:
        ha, hb = _host(rng, (batch, m, k), "float32"), _host(rng, (batch, k, n), "float32")
        a, b, c = dev.asarray(ha), dev.asarray(hb), dev.empty((batch, m, n), np.float32)
        ref = ha @ hb
        problem = {"m": m, "n": n, "k": k}
        base = G.SPEC.defaults(dev, problem, f32)
        cands = {"rule " + " ".join(f"{kk}{base[kk]}" for kk in ("VARIANT", "TM", "TN", "WPTM", "WPTN", "TK", "KS")): base}
        for tm, tn, wm, wn, tk in BMM_TILES:
            p = dict(base, VARIANT=0, TM=tm, TN=tn, WPTM=wm, WPTN=wn, TK=tk)
            if G.SPEC.is_valid(p, dev, problem, f32):
                cands[f"tile {tm}x{tn} w{wm}x{wn} k{tk}"] = p
        sides = {}
        for name, p in cands.items():
            try:
                with forced(G.SPEC, p):
                    first, combine, _, _, pbytes = G._steps(dev, f32, False, False, batch, m, n, k, m * k, k * n,
                                                            m * n, (batch, m, n))
                fn = (lambda first=first, combine=combine, pbytes=pbytes:
                      G._launch(dev, first, combine, pbytes, 1.0, 0.0, a, b, c))
                fn()
                err = float(np.linalg.norm(c.to_numpy() - ref) / np.linalg.norm(ref))
                if not err < 1e-4:
                    print(f"  bmm sweep {batch}x{m}x{n}x{k} {name}: WRONG (error {err:.3g})", flush=True)
                    continue
                sides[name] = (dev, fn)
            except Exception as exc:  # noqa: BLE001
                print(f"  bmm sweep {batch}x{m}x{n}x{k} {name}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        t = timed(sides, rounds, target_ms) if sides else {}
        best = min(t, key=t.get) if t else None
        for name, ms in sorted(t.items(), key=lambda kv: kv[1]):
            out.append({"batch": batch, "m": m, "n": n, "k": k, "config": name, "ms": ms, "best": name == best})
        if t:
            print(f"bmm sweep {batch}x{m}x{n}x{k}: " + ", ".join(
                f"{nm} {ms * 1e3:.1f}us" for nm, ms in sorted(t.items(), key=lambda kv: kv[1])[:4]), flush=True)
        for x in (a, b, c):
            x.close()
    return out


def cases(sections: list, quick: bool, dev):
    if quick:
        yield "skinny", "x@W.T", "float32", None, 3, 40, 64, True
        yield "skinny", "x@W.T", "bfloat16", None, 5, 48, 72, True
        yield "squares", "square", "float16", None, 64, 64, 64, False
        yield "bmm", "bmm", "float32", 4, 16, 24, 8, False
        return
    if "squares" in sections:
        for dtype in ("float16", "bfloat16"):
            for s in (4096, 8192):
                yield "squares", f"{s}^3", dtype, None, s, s, s, False
        if dev.backend == "cuda":
            yield "squares", "4096^3", "float32", None, 4096, 4096, 4096, False
    if "skinny" in sections:
        for n, k in WEIGHTS:
            for m in ROWS:
                yield "skinny", f"{m} x {n}x{k}.T", "bfloat16", None, m, n, k, True
        for n, k in WEIGHTS[:2]:
            for m in (1, 16, 64):
                yield "skinny", f"{m} x {n}x{k}.T", "float32", None, m, n, k, True
    if "llama" in sections:
        for model, layers in LLAMA.items():
            for layer, (n, k) in layers.items():
                for t in TOKENS:
                    yield "llama", f"{model} {layer} {t} tok", "bfloat16", None, t, n, k, True
    if "bmm" in sections:
        for batch, m, n, k in BMM:
            yield "bmm", f"{batch} x {m}x{n}x{k}", "float32", batch, m, n, k, False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--sections", default="squares,skinny,llama,bmm")
    p.add_argument("--sweep", action="store_true", help="force the rows kernel's configs at the skinny shapes (bfloat16)")
    p.add_argument("--sweep-bmm", action="store_true", help="force f32 tiles at the batched small gemms")
    p.add_argument("--sweep-rows", default="1,16,64")
    p.add_argument("--sweep-weights", default="4096x4096,4096x11008,128256x4096")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--target-ms", type=float, default=2.0, help="device time of one round of a side (about)")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test, not a measurement)")
    p.add_argument("--out", default=None, help="folder for gemm_llama-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    rng = np.random.default_rng(0)
    torch = Torch() if not args.quick else Torch.__new__(Torch)
    if args.quick:
        torch.torch = None
    rounds, target = (2, 0.2) if args.quick else (args.rounds, args.target_ms)
    copy_gbs = measure.copy_bandwidth(dev, None if not args.quick else 1 << 20, repeat=3 if args.quick else 10)
    print(f"{dev.id} {dev.name}: copy {copy_gbs:.0f} GB/s (read + write); torch: "
          f"{'yes' if torch.torch is not None else 'no'}", flush=True)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    rows = []
    t0 = time.monotonic()
    ops = Operands(dev, torch)
    for section, label, dtype, batch, m, n, k, tb in cases(sections, args.quick, dev):
        if not dev.supports(dtype):
            continue
        try:
            row = run_case(dev, torch, ops, rng, section, label, dtype, batch, m, n, k, tb, rounds, target, copy_gbs)
        except Exception as exc:  # noqa: BLE001 - one case failing (memory, a build) must not hide the others
            print(f"{section} {label} {dtype}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            continue
        rows.append(row)
        print(f"{section} {label} {dtype}: {row['ms'] * 1e3:.1f} us, {row['tflops']:.1f} TFLOP/s, "
              f"{row['pct_copy']:.0f}% of copy" + (f", torch {row['torch_ms'] * 1e3:.1f} us, {row['ratio']:.2f}x"
                                                    if "ratio" in row else "") + f" [{row['config']}]", flush=True)
    ops.close()
    swept_bmm = []
    if args.sweep_bmm:
        swept_bmm = sweep_bmm(dev, rng, [(4, 16, 24, 8)] if args.quick else BMM, rounds, target)
    swept = []
    if args.sweep and not args.quick:
        swept = sweep(dev, rng, [int(r) for r in args.sweep_rows.split(",")],
                      [tuple(int(v) for v in w.split("x")) for w in args.sweep_weights.split(",")], rounds, target, copy_gbs)
    elif args.sweep:
        swept = sweep(dev, rng, [3], [(40, 64)], rounds, target, copy_gbs, quick=True)
    report = measure.Report("gemm_llama", f"gemm at issue 29's and Llama's shapes on {dev.name} ({dev.backend}) "
                            f"vs torch", dev, data={"rows": rows, "sweep": swept, "sweep_bmm": swept_bmm, "copy_GBs": copy_gbs},
                            notes=[f"copy bandwidth {copy_gbs:.0f} GB/s (read + write); ratio: torch's time over "
                                   "isthmus's (above 1: isthmus is faster); % of copy: bytes moved (operands read "
                                   "once, C written once) per second over the copy's rate; config: what the call "
                                   f"launched (the shipped configs and the rule); {time.monotonic() - t0:.0f} s"])
    report.add_table(["section", "case", "dtype", "config", "isthmus us", "TFLOP/s", "% of copy", "torch us",
                      "torch % of copy", "torch / isthmus"],
                     [[r["section"], r["case"], r["dtype"], r["config"], f"{r['ms'] * 1e3:.4g}", f"{r['tflops']:.4g}",
                       f"{r['pct_copy']:.0f}%", f"{r['torch_ms'] * 1e3:.4g}" if "torch_ms" in r else "-",
                       f"{r['torch_pct_copy']:.0f}%" if r.get("torch_pct_copy") else "-",
                       f"{r['ratio']:.2f}x" if "ratio" in r else "-"] for r in rows])
    if swept:
        report.add_table(["m", "n", "k", "config", "us", "% of copy", "best"],
                         [[s["m"], s["n"], s["k"], s["config"], f"{s['ms'] * 1e3:.4g}", f"{s['pct_copy']:.0f}%",
                           "*" if s["best"] else ""] for s in swept], caption="forced configs (bfloat16 x @ W.T)")
    if swept_bmm:
        report.add_table(["batch", "m", "n", "k", "config", "us", "best"],
                         [[s["batch"], s["m"], s["n"], s["k"], s["config"], f"{s['ms'] * 1e3:.4g}", "*" if s["best"] else ""]
                          for s in swept_bmm], caption="forced f32 tiles (batched)")
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
