"""attention: softmax attention for prefill, FlashAttention-2's order (attention.cl): a work-group per
(query tile, head), key tiles through local memory with an online softmax, never the score matrix.

Layouts as FlashAttention's: dense ``(batch, seq, heads, head_dim)``; variable lengths
``(total_tokens, heads, head_dim)`` with int32 ``cu_seqlens_q``/``cu_seqlens_k`` of ``batch + 1``
offsets. Grouped-query and multi-query attention: k and v have ``kv_heads`` dividing ``heads``.
"""
from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable, sample

MAX_HEAD_DIM = 256  # the accumulators a work-item holds (attention.cl: HD); the restrictions' min(head_dim, 256)
_F32 = lookup("float32")
_I32 = lookup("int32")


def rule(buckets: dict, device, dt, params: dict) -> dict:
    """Query tiles of 64 rows on GPUs, 16 on CPUs (a core runs a group's items as SIMD lanes);
    key tiles that keep K and V (f32) within half the local memory."""
    bq = 16 if device.kind == "cpu" else 64
    bkt = 32
    while bkt > 4 and 2 * bkt * buckets["head_dim"] * 4 > device.local_mem_size // 2:
        bkt //= 2
    return {"BQ": min(bq, device.max_work_group_size), "BKT": bkt}


SPEC = OpSpec(
    name="attention", source="attention.cl", entries=("attention",), dtypes=("float32", "float16", "bfloat16"),
    tunables=(Tunable("BQ", (8, 16, 32, 64, 128), 64), Tunable("BKT", (4, 8, 16, 32, 64), 16)),
    problem=("batch", "seq_q", "seq_k", "heads", "kv_heads", "head_dim"),
    restrictions=("BQ <= max_work_group_size", "2 * BKT * min(head_dim, 256) * acc_size <= local_mem_size"),
    cpu_defaults=(("BQ", 16), ("BKT", 32)),
    rule=rule,
)


def _mma_rule(buckets: dict, device, dt, params: dict) -> dict:
    """The tensor-core path: 4 warps of 16 query rows (64 a group), Q's fragments in registers,
    a 2-stage ring of 64-key tiles (32 where a group has 48 KiB at most); head dim 256: K/V tiles
    of 32 keys and Q re-read from local memory (the registers hold the 16 x 256 outputs)."""
    d = buckets["head_dim"]
    if d <= 128:
        return {"WARPS": 4, "MI": 1, "BKV": 64 if device.local_mem_optin else 32, "STAGES": 2, "QREG": 1}
    return {"WARPS": 4, "MI": 1, "BKV": 32, "STAGES": 2, "QREG": 0}


# The tensor-core path of the same source (attention.cl, MMA_PTX=1): devices with mma.sync (CUDA,
# NVIDIA's OpenCL), float16/bfloat16, head dims that are multiples of 16. Not an op of its own:
# attention() comes here where it applies (use_mma), with its own tuning key.
MMA = OpSpec(
    name="attention_mma", source="attention.cl", entries=("attention",), dtypes=("float16", "bfloat16"),
    tunables=(Tunable("WARPS", (1, 2, 4, 8), 4), Tunable("MI", (1, 2), 1), Tunable("BKV", (16, 32, 64, 128), 64),
              Tunable("STAGES", (2, 3, 4), 2), Tunable("QREG", (0, 1), 1)),
    problem=("batch", "seq_q", "seq_k", "heads", "kv_heads", "head_dim"),
    restrictions=("32 * WARPS <= max_work_group_size",
                  # Q (BQ rows) and the ring of K and V tiles, rows padded by 8 elements; with QREG
                  # the ring reuses Q's memory; up to 128 bytes to align a static array
                  "2 * (max(16 * MI * WARPS, STAGES * 2 * BKV) if QREG else 16 * MI * WARPS + STAGES * 2 * BKV)"
                  " * (min(head_dim, 256) + 8) + 128 <= local_mem_optin",
                  # f32 scores, outputs (and Q's fragments) a lane holds: more spills (ptxas, sm_90a)
                  "MI * (BKV // 2 + min(head_dim, 256) // 2 + (min(head_dim, 256) // 4 if QREG else 0)) <= 160"),
    storage=(("float16", "ushort"),),  # 16-bit patterns: cp.async, ldmatrix and mma.sync read them as they are
    defines=(("MMA_PTX", 1),),
    rule=_mma_rule,
)


def use_mma(dev, dt, d: int) -> bool:
    """Whether attention runs the tensor-core path: mma.sync, a 16-bit float, head dim a multiple of 16
    (or, in an :func:`emulated_mma` context, a CPU device: the emulated warp instructions)."""
    return ((bool(dev.mma_sync) or (_emulated.get() and dev.kind == "cpu"))
            and dt.name in ("float16", "bfloat16") and d % 16 == 0 and d <= MAX_HEAD_DIM)


# MMA_EMU (opencl/attn_mma.h): the tensor-core paths with their warp-level instructions emulated, for
# the tests on devices without them (work-groups of one warp: force WARPS=1)
_emulated: contextvars.ContextVar = contextvars.ContextVar("isthmus_attention_mma_emulated", default=False)


@contextmanager
def emulated_mma():
    """Within this context the attention ops run their tensor-core paths on any OpenCL device, the
    warp-level instructions emulated (slow; the tests' portable twin of the GPU path)."""
    token = _emulated.set(True)
    try:
        yield
    finally:
        _emulated.reset(token)


def mma_variant(dev, d: int) -> tuple:
    """The -D macros of a tensor-core build this call decides: head dim, dynamic local memory, PTX or emulation."""
    if dev.mma_sync:
        return (("HD", d), ("DYN_SMEM", int(bool(dev.local_mem_dynamic))))
    return (("HD", d), ("DYN_SMEM", 0), ("MMA_PTX", 0), ("MMA_EMU", 1))


def mma_smem_bytes(p: dict, d: int) -> int:
    """Bytes of the tensor-core path's local memory (attention.cl's SMEM_ELEMS * 2) for config ``p``."""
    bq, ring = 16 * p["MI"] * p["WARPS"], p["STAGES"] * 2 * p["BKV"]
    return 2 * (max(bq, ring) if p["QREG"] else bq + ring) * (d + 8)


def _mask_args(op: str, causal, scale, sliding_window, softcap, d: int) -> tuple:
    causal = checks.flag(op, "causal", causal)
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    scale = float(checks.scalar(op, "scale", scale, "float"))
    if sliding_window is None:
        window = 0
    else:
        window = checks.scalar(op, "sliding_window", sliding_window, "int")
        if window < 1:
            raise InvalidArgumentError(f"{op}: sliding_window = {sliding_window!r} must be at least 1 (the keys "
                                       f"a query sees, itself included), or None for no window")
    if softcap is None:
        cap = 0.0
    else:
        cap = float(checks.scalar(op, "softcap", softcap, "float"))
        if not cap > 0:
            raise InvalidArgumentError(f"{op}: softcap = {softcap!r} must be positive (scores become "
                                       f"softcap * tanh(score / softcap)), or None for none")
    return causal, scale, int(window), cap


def check_heads(op: str, heads: int, kv_heads: int, d: int, k_name: str = "k") -> None:
    if kv_heads < 1 or heads % kv_heads:
        raise InvalidArgumentError(f"{op}: q has {heads} heads and {k_name} has {kv_heads}; the kv heads must divide "
                                   f"the query heads (grouped-query attention repeats each kv head for "
                                   f"heads / kv_heads query heads)")
    if not 1 <= d <= MAX_HEAD_DIM:
        raise InvalidArgumentError(f"{op}: head_dim {d} is not supported; it must be 1 to {MAX_HEAD_DIM} "
                                   f"(64, 96, 128 and 256 are the usual ones)")


def lengths_buffer(op: str, name: str, x, n: int | None) -> Buffer:
    """An int32 1-D device buffer of ``n`` elements (offsets, lengths, positions)."""
    x = checks.buffer(op, name, x, ndim=1)
    if x.dtype != "int32":
        raise InvalidArgumentError(f"{op}: {name} must be int32, got {x.dtype} (make it with "
                                   f"dev.asarray(np.asarray(..., np.int32)))")
    if n is not None and x.shape[0] != n:
        raise InvalidArgumentError(f"{op}: {name} has {x.shape[0]} elements; it must have {n}")
    return x


def f32_output(op: str, name: str, given, like: Buffer, shape: tuple) -> Buffer:
    """``given`` checked to take a float32 result of ``shape`` on like's device, or a new buffer."""
    if given is None:
        return Buffer._allocate(like.device, shape, _F32, 4 * math.prod(shape))
    given = checks.buffer(op, name, given)
    if given.device is not like.device:
        raise InvalidArgumentError(f"{op}: {name} lives on {given.device.id}, the other arguments on {like.device.id}")
    if given.dtype != "float32" or given.shape != tuple(shape):
        raise InvalidArgumentError(f"{op}: {name} must be float32 of shape {tuple(shape)}, got {given.dtype} "
                                   f"{given.shape}")
    return given


def _steps(dev, dt, qs: tuple, ks: tuple, batch: int, varlen: bool) -> tuple:
    if varlen:
        (tq, heads, d), (tk, kvh, _) = qs, ks
        problem = {"batch": batch, "seq_q": max(1, tq // max(batch, 1)), "seq_k": max(1, tk // max(batch, 1)),
                   "heads": heads, "kv_heads": kvh, "head_dim": d}
    else:
        (b, sq, heads, d), (_, sk, kvh, _) = qs, ks
        problem = {"batch": b, "seq_q": sq, "seq_k": sk, "heads": heads, "kv_heads": kvh, "head_dim": d}
    problem = {k: max(v, 1) for k, v in problem.items()}
    if use_mma(dev, dt, d):
        variant = mma_variant(dev, d)
        params, kernels = resolve(MMA, dev, dt, problem, variant)
        kern = kernels["attention"]
        if dict(variant)["DYN_SMEM"]:  # CUDA: the local memory is dynamic, its size given at every launch
            kern.dynamic_local_bytes = mma_smem_bytes(params, d)
        bq, nt = 16 * params["MI"] * params["WARPS"], 32 * params["WARPS"]
    else:
        params, kernels = resolve(SPEC, dev, dt, problem, (("HD", d),))
        kern = kernels["attention"]
        bq = nt = params["BQ"]
    tiles = -(-qs[0] // bq) + batch if varlen else problem["batch"] * -(-problem["seq_q"] // bq)
    return kern, (tiles * nt, heads), (nt, 1)


def attention(q, k, v, causal=True, scale=None, sliding_window=None, softcap=None, return_lse=False,
              cu_seqlens_q=None, cu_seqlens_k=None, out=None, lse_out=None) -> "Buffer | tuple[Buffer, Buffer]":
    """Softmax attention ``softmax(scale * q k^T) v`` per head, without forming the scores.

    q ``(batch, seq_q, heads, head_dim)``, k and v ``(batch, seq_k, kv_heads, head_dim)`` (kv_heads
    dividing heads: grouped-query attention); or, with ``cu_seqlens_q``/``cu_seqlens_k`` (int32
    offsets, ``batch + 1`` each), q ``(total_q, heads, head_dim)`` and k, v ``(total_k, kv_heads,
    head_dim)`` holding the sequences one after another. ``causal``: a query sees the keys up to its
    own position, the mask aligned to the end when seq_k > seq_q (new tokens over a longer cache).
    ``scale``: default 1/sqrt(head_dim). ``sliding_window``: a query sees at most that many keys
    (itself and the ones before). ``softcap``: scores become ``softcap * tanh(score / softcap)``.
    ``return_lse``: also the natural log-sum-exp of each row's scaled scores, float32
    ``(batch, heads, seq_q)`` (variable lengths: ``(heads, total_q)``), ``-inf`` for a row that sees
    no key (its output is 0); ``lse_out``: a buffer to write it into. Returns o (and lse).

    >>> o = isthmus.ops.attention(q, k, v)                       # causal prefill
    >>> o, lse = isthmus.ops.attention(q, k, v, causal=False, return_lse=True)
    """
    op = "attention"
    q = checks.buffer(op, "q", q)
    k = checks.buffer(op, "k", k)
    v = checks.buffer(op, "v", v)
    checks.like(op, q, "k", k)
    checks.like(op, q, "v", v)
    dev, dt = q.device, q._dt or checks.dtype(q)
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None
    if varlen and (cu_seqlens_q is None or cu_seqlens_k is None):
        raise InvalidArgumentError(f"{op}: give both cu_seqlens_q and cu_seqlens_k (variable lengths), or neither")
    rank = 3 if varlen else 4
    for name, x in (("q", q), ("k", k), ("v", v)):
        if len(x.shape) != rank:
            raise InvalidArgumentError(
                f"{op}: {name} must be {rank}-D, got shape {x.shape} (" + (
                    "(total_tokens, heads, head_dim) with cu_seqlens" if varlen else
                    "(batch, seq, heads, head_dim); pass cu_seqlens_q/cu_seqlens_k for variable lengths") + ")")
    if k.shape != v.shape:
        raise InvalidArgumentError(f"{op}: k has shape {k.shape} and v {v.shape}; they must be the same")
    heads, d, kvh = q.shape[-2], q.shape[-1], k.shape[-2]
    if k.shape[-1] != d:
        raise InvalidArgumentError(f"{op}: q has head_dim {d} and k {k.shape[-1]}; they must be the same")
    check_heads(op, heads, kvh, d)
    if varlen:
        cu_q = lengths_buffer(op, "cu_seqlens_q", cu_seqlens_q, None)
        batch = cu_q.shape[0] - 1
        if batch < 0:
            raise InvalidArgumentError(f"{op}: cu_seqlens_q must hold batch + 1 offsets (0 first), got none")
        cu_k = lengths_buffer(op, "cu_seqlens_k", cu_seqlens_k, batch + 1)
        lse_shape = (heads, q.shape[0])
    else:
        cu_q = cu_k = None
        batch = q.shape[0]
        if k.shape[0] != batch:
            raise InvalidArgumentError(f"{op}: q has batch {batch} and k {k.shape[0]}; they must be the same")
        lse_shape = (batch, heads, q.shape[1])
    causal, scale, window, cap = _mask_args(op, causal, scale, sliding_window, softcap, d)
    return_lse = checks.flag(op, "return_lse", return_lse)
    kern, g, loc = plan(SPEC, (dev, dt.name, q.shape, k.shape, batch, varlen, _emulated.get()),
                        lambda: _steps(dev, dt, q.shape, k.shape, batch, varlen))
    o = checks.output(op, out, q, q.shape)
    if out is not None:
        checks.disjoint(op, o, q=q, k=k, v=v)
    lse = f32_output(op, "lse_out", lse_out, q, lse_shape) if return_lse or lse_out is not None else None
    if q.nbytes and g[0]:
        dev.launch(kern, g, loc, [q.shape[1] if not varlen else 0, k.shape[1] if not varlen else 0, heads, kvh,
                                  np.float32(scale), int(causal), window, np.float32(cap), cu_q, cu_k, batch,
                                  q.shape[0] if varlen else -1, q, k, v, o, lse, int(lse is not None)])
    return (o, lse) if return_lse else o


def reference(xp, q, k, v, causal=True, scale=None, sliding_window=None, softcap=None):
    """Dense attention in the accumulator precision (float32; float64 for float64 inputs)."""
    acc = xp.float64 if q.dtype == xp.float64 else xp.float32
    qf, kf, vf = (xp.asarray(t).astype(acc) for t in (q, k, v))
    b, sq, h, d = qf.shape
    sk, kvh = kf.shape[1], kf.shape[2]
    rep = h // kvh
    kf, vf = xp.repeat(kf, rep, axis=2), xp.repeat(vf, rep, axis=2)
    s = xp.einsum("bihd,bjhd->bhij", qf, kf) * acc(1.0 / math.sqrt(d) if scale is None else scale)
    if softcap:
        s = softcap * xp.tanh(s / softcap)
    i = xp.arange(sq)[:, None] + (sk - sq)
    j = xp.arange(sk)[None, :]
    seen = xp.ones((sq, sk), dtype=bool)
    if causal:
        seen &= j <= i
    if sliding_window:
        seen &= j > i - sliding_window
        if not causal:
            seen &= j < i + sliding_window
    s = xp.where(seen, s, -xp.inf)
    m = s.max(axis=-1, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    e = xp.exp(s - m)
    den = e.sum(axis=-1, keepdims=True)
    o = xp.einsum("bhij,bjhd->bihd", e / xp.where(den > 0, den, 1), vf)
    return o.astype(q.dtype)


def _inputs(p: dict, dt, rng) -> tuple:
    b, sq, sk, h, kvh, d = (p[n] for n in SPEC.problem)
    return sample(rng, (b, sq, h, d), dt), sample(rng, (b, sk, kvh, d), dt), sample(rng, (b, sk, kvh, d), dt)


SPEC = SPEC.completed(
    run=attention, reference=reference, inputs=_inputs,
    sizes=Sizes(gpu={"batch": 4, "seq_q": 4096, "seq_k": 4096, "heads": 32, "kv_heads": 32, "head_dim": 128},
                cpu={"batch": 1, "seq_q": 256, "seq_k": 256, "heads": 4, "kv_heads": 4, "head_dim": 64},
                quick={"batch": 1, "seq_q": 128, "seq_k": 128, "heads": 2, "kv_heads": 2, "head_dim": 64},
                tiny={"batch": 1, "seq_q": 8, "seq_k": 8, "heads": 1, "kv_heads": 1, "head_dim": 16},
                odd=({"batch": 1, "seq_q": 1, "seq_k": 1, "heads": 1, "kv_heads": 1, "head_dim": 8},
                     {"batch": 2, "seq_q": 37, "seq_k": 53, "heads": 6, "kv_heads": 2, "head_dim": 24})),
    moved=lambda p, size: size * (2 * p["batch"] * p["seq_q"] * p["heads"] * p["head_dim"]
                                  + 2 * p["batch"] * p["seq_k"] * p["kv_heads"] * p["head_dim"]),
    flops=lambda p: 4 * p["batch"] * p["heads"] * p["seq_q"] * p["seq_k"] * p["head_dim"],
    tolerance=8.0,
    summary="softmax attention (flash prefill): causal, GQA, sliding window, softcap, variable lengths, lse")
# the tensor-core path is reached through attention (16-bit floats on devices with mma.sync)
MMA = MMA.completed(run=attention, reference=reference, inputs=_inputs, sizes=SPEC.sizes, moved=SPEC.moved,
                    flops=SPEC.flops, tolerance=8.0, library=False,
                    summary="attention's tensor-core path (mma.sync, cp.async): float16 and bfloat16")
SPECS = (SPEC, MMA)
