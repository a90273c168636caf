"""decode_attention, paged_decode_attention, kv_append, paged_kv_append: attention of one new token
per sequence (or a few: speculative decoding) over a KV cache, contiguous ``(batch, max_len,
kv_heads, head_dim)`` or paged ``(num_pages, page_size, kv_heads, head_dim)`` with an int32
``page_table`` ``(batch, max_pages)`` (vLLM's and FlashInfer's layout), and the append of new keys
and values into either cache (decode_attention.cl).

Flash decoding: each (sequence, kv head) splits its keys into SPLITS chunks, a work-group each,
whose partial outputs and log-sum-exps a second launch merges; the rule picks SPLITS from the
batch, the cache length and the device's compute units (enough work-groups to fill the device,
each chunk several tiles long). Lengths, positions and page tables are device buffers read by the
kernels, so a captured graph replays with new ones without re-capture.
"""
from __future__ import annotations

import math

import numpy as np

from ...buffer import Buffer
from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable, bucket, sample
from .attention import _emulated, check_heads, f32_output, lengths_buffer, mma_variant

_SPLITS = (1, 2, 4, 8, 16, 32, 64)


def rule(buckets: dict, device, dt, params: dict) -> dict:
    """RB: every row of a (sequence, kv head) in one group, up to 16 (a GQA group of 8 query heads is
    one group); WG: 64 keys per tile on GPUs, 32 on CPUs; SPLITS: the fewest chunks that give the
    device 4 work-groups per compute unit (1 per unit on CPUs), no chunk shorter than 4 tiles."""
    rows = buckets["new"] * max(1, buckets["heads"] // buckets["kv_heads"])
    rb = min(16, rows)
    wg = min(32 if device.kind == "cpu" else 64, device.max_work_group_size)
    groups = buckets["batch"] * buckets["kv_heads"] * max(1, rows // rb)
    want = (1 if device.kind == "cpu" else 4) * max(1, device.compute_units)
    splits = 1
    while splits < 64 and groups * splits < want and buckets["keys"] >= splits * 2 * 4 * wg:
        splits *= 2
    return {"WG": wg, "RB": rb, "SPLITS": splits}


SPEC = OpSpec(
    name="decode_attention", source="decode_attention.cl", entries=("decode_partial", "decode_combine"),
    dtypes=("float32", "float16", "bfloat16"),
    tunables=(Tunable("WG", (16, 32, 64, 128, 256), 64), Tunable("RB", (1, 2, 4, 8, 16), 8),
              Tunable("SPLITS", _SPLITS, 1)),
    problem=("batch", "new", "keys", "heads", "kv_heads", "head_dim"),
    restrictions=("WG <= max_work_group_size", "RB <= WG",
                  "(RB * min(head_dim, 256) + RB * WG + WG * (min(head_dim, 256) + 1) + 3 * RB) * acc_size "
                  "<= local_mem_size"),
    cpu_defaults=(("WG", 32),),
    rule=rule,
)


_MMA_SPLITS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _mma_rule(buckets: dict, device, dt, params: dict) -> dict:
    """The tensor-core path: 32-key tiles in a 3-stage ring (2 where a group has 48 KiB at most);
    SPLITS: the fewest chunks that give the device 4 one-warp work-groups per compute unit, no
    chunk shorter than 256 keys."""
    blocks = max(1, -(-(buckets["new"] * max(1, buckets["heads"] // buckets["kv_heads"])) // 16))
    groups = buckets["batch"] * buckets["kv_heads"] * blocks
    want = 4 * max(1, device.compute_units)
    splits = 1
    while splits < _MMA_SPLITS[-1] and groups * splits < want and buckets["keys"] >= splits * 2 * 256:
        splits *= 2
    return {"BKV": 32, "STAGES": 3 if device.local_mem_optin else 2, "SPLITS": splits}


# The tensor-core path of the same source (decode_attention.cl, MMA_PTX=1): devices with mma.sync,
# float16/bfloat16, head dims that are multiples of 16 up to 128. Not an op of its own: the decode
# ops come here where it applies (use_mma), with their own tuning keys.
MMA = OpSpec(
    name="decode_attention_mma", source="decode_attention.cl", entries=("decode_partial", "decode_combine"),
    dtypes=("float16", "bfloat16"),
    tunables=(Tunable("BKV", (16, 32, 64), 32), Tunable("STAGES", (2, 3, 4, 5, 6), 3),
              Tunable("SPLITS", _MMA_SPLITS, 1)),
    problem=("batch", "new", "keys", "heads", "kv_heads", "head_dim"),
    restrictions=(  # Q's 16 rows and the ring of K and V tiles (rows padded by 8), the tiles' cache rows
                  "2 * (16 + STAGES * 2 * BKV) * (min(head_dim, 256) + 8) + 4 * STAGES * BKV + 128 <= local_mem_optin",
                  "BKV // 2 + 3 * min(head_dim, 256) // 4 <= 160"),  # f32 registers a lane holds (no spills)
    # (decode_combine's work-group: WG; RB: decode_partial's rows are one m16 block)
    defines=(("MMA_PTX", 1), ("WG", 64), ("RB", 16)),
    rule=_mma_rule,
)


def use_mma(dev, dt, d: int) -> bool:
    """Whether decoding runs the tensor-core path: mma.sync, a 16-bit float, head dim a multiple of 16 up to 128."""
    return ((bool(dev.mma_sync) or (_emulated.get() and dev.kind == "cpu"))
            and dt.name in ("float16", "bfloat16") and d % 16 == 0 and d <= 128)


def _cache(op: str, names: tuple, caches: tuple, q) -> tuple:
    k, v = (checks.buffer(op, n, c, ndim=4) for n, c in zip(names, caches))
    checks.like(op, q, names[0], k)
    checks.like(op, q, names[1], v)
    if k.shape != v.shape:
        raise InvalidArgumentError(f"{op}: {names[0]} has shape {k.shape} and {names[1]} {v.shape}; they must be the same")
    return k, v


def _query(op: str, q) -> tuple:
    q = checks.buffer(op, "q", q)
    if len(q.shape) not in (3, 4):
        raise InvalidArgumentError(f"{op}: q must be (batch, heads, head_dim) or (batch, n_new, heads, head_dim), "
                                   f"got shape {q.shape}")
    b, n = q.shape[0], 1 if len(q.shape) == 3 else q.shape[1]
    return q, b, n, q.shape[-2], q.shape[-1]


def _page_table(op: str, table, batch: int) -> Buffer:
    table = checks.buffer(op, "page_table", table, ndim=2)
    if table.dtype != "int32" or table.shape[0] != batch:
        raise InvalidArgumentError(f"{op}: page_table must be int32 of shape (batch, max_pages) with batch {batch}, "
                                   f"got {table.dtype} {table.shape}")
    return table


def _decode_steps(spec, dev, dt, b, n, heads, kvh, d, keys, rows) -> tuple:
    problem = {"batch": b, "new": n, "keys": keys, "heads": heads, "kv_heads": kvh, "head_dim": d}
    if use_mma(dev, dt, d):
        mspec = PAGED_MMA if spec is PAGED else MMA
        variant = mma_variant(dev, d)
        params, kernels = resolve(mspec, dev, dt, {k: max(v, 1) for k, v in problem.items()}, variant)
        part = kernels["decode_partial"]
        if dict(variant)["DYN_SMEM"]:  # CUDA: Q and the ring in dynamic shared memory, its size given at every launch
            part.dynamic_local_bytes = 2 * (16 + params["STAGES"] * 2 * params["BKV"]) * (d + 8)
        splits, blocks = params["SPLITS"], -(-(n * heads // kvh) // 16)
        return (part, (splits * 32, kvh * blocks, b), (32, 1, 1), kernels["decode_combine"],
                (rows * 64,), (64,), rows * splits * (d + 1) * 4)
    params, kernels = resolve(spec, dev, dt, {k: max(v, 1) for k, v in problem.items()}, (("HD", d),))
    wg, rb, splits = params["WG"], params["RB"], params["SPLITS"]
    blocks = -(-(n * heads // kvh) // rb)
    return (kernels["decode_partial"], (splits * wg, kvh * blocks, b), (wg, 1, 1), kernels["decode_combine"],
            (rows * wg,), (wg,), rows * splits * (d + 1) * 4)


def _decode(spec, op, q, k, v, lengths, table, page_size, scale, return_lse, out, lse_out):
    q, b, n, heads, d = q
    dev, dt = q.device, q._dt or checks.dtype(q)
    num_pages, _, kvh, kd = k.shape
    if kd != d:
        raise InvalidArgumentError(f"{op}: q has head_dim {d} and the cache {kd}; they must be the same")
    check_heads(op, heads, kvh, d, "the cache")
    max_pages = 1 if table is None else table.shape[1]
    if n > max_pages * page_size:
        raise InvalidArgumentError(f"{op}: {n} new tokens do not fit a cache of {max_pages * page_size} keys per "
                                   f"sequence (the new tokens' keys are the last ones of the cache)")
    lengths = lengths_buffer(op, "lengths", lengths, b)
    scale = float(checks.scalar(op, "scale", 1.0 / math.sqrt(d) if scale is None else scale, "float"))
    return_lse = checks.flag(op, "return_lse", return_lse)
    rows = b * n * heads
    part, pg, pl, comb, cg, cl, nbytes = plan(
        spec, (dev, dt.name, q.shape, k.shape, max_pages, _emulated.get()),
        lambda: _decode_steps(spec, dev, dt, b, n, heads, kvh, d, max_pages * page_size, rows))
    o = checks.output(op, out, q, q.shape)
    if out is not None:
        checks.disjoint(op, o, q=q, k=k, v=v)
    lse = f32_output(op, "lse_out", lse_out, q, q.shape[:-1]) if return_lse or lse_out is not None else None
    if rows and d:
        ws = dev._temporary(nbytes)
        dev.launch(part, pg, pl, [n, heads, kvh, max_pages, page_size, num_pages, int(table is not None),
                                  np.float32(scale), lengths, table, q, k, v, ws])
        dev.launch(comb, cg, cl, [rows, ws, o, lse, int(lse is not None)])
    return (o, lse) if return_lse else o


def decode_attention(q, k_cache, v_cache, lengths, scale=None, return_lse=False, out=None,
                     lse_out=None) -> "Buffer | tuple[Buffer, Buffer]":
    """Attention of the new tokens over a contiguous KV cache (flash decoding).

    q ``(batch, heads, head_dim)`` (one new token per sequence) or ``(batch, n_new, heads, head_dim)``;
    k_cache, v_cache ``(batch, max_len, kv_heads, head_dim)``; lengths int32 ``(batch,)``: the keys
    each sequence holds, the new tokens' own already appended (``kv_append``) as its last n_new
    (new token t sees keys up to ``lengths[b] - n_new + t``; lengths are clamped to max_len).
    ``return_lse``: also the natural log-sum-exp per row, float32 ``q.shape[:-1]`` (-inf, output 0, for
    a row that sees no key); ``lse_out``: a buffer for it. Returns o shaped as q (and lse).

    >>> o = isthmus.ops.decode_attention(q, k_cache, v_cache, lengths)
    """
    op = "decode_attention"
    q = _query(op, q)
    k, v = _cache(op, ("k_cache", "v_cache"), (k_cache, v_cache), q[0])
    if k.shape[0] != q[1]:
        raise InvalidArgumentError(f"{op}: q has batch {q[1]} and k_cache {k.shape[0]}; they must be the same")
    return _decode(SPEC, op, q, k, v, lengths, None, k.shape[1], scale, return_lse, out, lse_out)


def paged_decode_attention(q, k_pages, v_pages, page_table, lengths, scale=None, return_lse=False, out=None,
                           lse_out=None) -> "Buffer | tuple[Buffer, Buffer]":
    """Attention of the new tokens over a paged KV cache (flash decoding).

    k_pages, v_pages ``(num_pages, page_size, kv_heads, head_dim)``; page_table int32 ``(batch,
    max_pages)``: sequence b's key p is in page ``page_table[b, p // page_size]``; lengths int32
    ``(batch,)`` (clamped to max_pages * page_size; a page number outside the pool holds nothing).
    q, lengths and the result as in :func:`decode_attention`.

    >>> o = isthmus.ops.paged_decode_attention(q, k_pages, v_pages, page_table, lengths)
    """
    op = "paged_decode_attention"
    q = _query(op, q)
    k, v = _cache(op, ("k_pages", "v_pages"), (k_pages, v_pages), q[0])
    table = _page_table(op, page_table, q[1])
    return _decode(PAGED, op, q, k, v, lengths, table, k.shape[1], scale, return_lse, out, lse_out)


# ---- kv_append ------------------------------------------------------------------------------

APPEND = OpSpec(
    name="kv_append", source="decode_attention.cl", entries=("kv_append",),
    dtypes=("float32", "float16", "bfloat16"),
    tunables=(Tunable("WG", (32, 64, 128, 256), 256),),
    problem=("batch", "new", "keys", "heads", "kv_heads", "head_dim"),
    restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64),),
    # (the shared source's other kernels need these to build)
    defines=(("RB", 1), ("SPLITS", 1)),
)


def _new(op: str, k_new, v_new, k: Buffer) -> tuple:
    kn, vn = checks.buffer(op, "k_new", k_new), checks.buffer(op, "v_new", v_new)
    checks.like(op, k, "k_new", kn)
    checks.like(op, k, "v_new", vn)
    if kn.shape != vn.shape or len(kn.shape) not in (3, 4) or kn.shape[-2:] != k.shape[-2:]:
        raise InvalidArgumentError(f"{op}: k_new and v_new must both be (batch, n_new, kv_heads, head_dim) or "
                                   f"(batch, kv_heads, head_dim) with the cache's kv_heads, head_dim {k.shape[-2:]}; "
                                   f"got {kn.shape} and {vn.shape}")
    return kn, vn, kn.shape[0], 1 if len(kn.shape) == 3 else kn.shape[1]


def _append(spec, op, k, v, kn, vn, b, n, table, page_size, positions) -> tuple:
    dev, dt = k.device, k._dt or checks.dtype(k)
    max_pages = 1 if table is None else table.shape[1]
    if n > max_pages * page_size:
        raise InvalidArgumentError(f"{op}: {n} new tokens per sequence do not fit a cache of "
                                   f"{max_pages * page_size} keys per sequence")
    positions = lengths_buffer(op, "positions", positions, b)
    checks.disjoint(op, k, "k_cache", k_new=kn, v_new=vn)
    checks.disjoint(op, v, "v_cache", k_new=kn, v_new=vn, k_cache=k)
    total = kn.size

    def steps():
        problem = {"batch": b, "new": n, "keys": max_pages * page_size, "heads": k.shape[2], "kv_heads": k.shape[2],
                   "head_dim": k.shape[3]}
        params, kernels = resolve(spec, dev, dt, {x: max(y, 1) for x, y in problem.items()}, (("HD", k.shape[3]),))
        wg = params["WG"]
        return kernels["kv_append"], (max(1, -(-total // wg)) * wg,), (wg,)

    kern, g, loc = plan(spec, (dev, dt.name, kn.shape, k.shape, max_pages), steps)
    if total:
        dev.launch(kern, g, loc, [np.int64(total), n, k.shape[2], max_pages, page_size, k.shape[0],
                                  int(table is not None), positions, table, kn, vn, k, v])
    return k, v


def kv_append(k_cache, v_cache, k_new, v_new, positions) -> "tuple[Buffer, Buffer]":
    """Write new keys and values into a contiguous cache, in place: ``k_cache[b, positions[b] + t] =
    k_new[b, t]`` (and v). k_new, v_new ``(batch, n_new, kv_heads, head_dim)`` or ``(batch,
    kv_heads, head_dim)``; positions int32 ``(batch,)``; keys past max_len are dropped. Returns
    ``(k_cache, v_cache)``.

    >>> isthmus.ops.kv_append(k_cache, v_cache, k, v, lengths)   # then lengths += 1
    """
    op = "kv_append"
    k, v = _cache(op, ("k_cache", "v_cache"), (k_cache, v_cache), checks.buffer(op, "k_cache", k_cache))
    kn, vn, b, n = _new(op, k_new, v_new, k)
    if b != k.shape[0]:
        raise InvalidArgumentError(f"{op}: k_new has batch {b} and k_cache {k.shape[0]}; they must be the same")
    return _append(APPEND, op, k, v, kn, vn, b, n, None, k.shape[1], positions)


def paged_kv_append(k_pages, v_pages, k_new, v_new, page_table, positions) -> "tuple[Buffer, Buffer]":
    """Write new keys and values into a paged cache, in place: sequence b's token t goes to key
    ``positions[b] + t``, in page ``page_table[b, (positions[b] + t) // page_size]``; keys past
    max_pages * page_size or on a page outside the pool are dropped. Returns ``(k_pages, v_pages)``.

    >>> isthmus.ops.paged_kv_append(k_pages, v_pages, k, v, page_table, lengths)
    """
    op = "paged_kv_append"
    k, v = _cache(op, ("k_pages", "v_pages"), (k_pages, v_pages), checks.buffer(op, "k_pages", k_pages))
    kn, vn, b, n = _new(op, k_new, v_new, k)
    table = _page_table(op, page_table, b)
    return _append(PAGED_APPEND, op, k, v, kn, vn, b, n, table, k.shape[1], positions)


# ---- references (float32; float64 inputs in float64) -----------------------------------------

def _gather(xp, pages, table):
    """A paged cache as a contiguous one: (batch, max_pages * page_size, kv_heads, head_dim)."""
    t = xp.clip(xp.asarray(table), 0, pages.shape[0] - 1)
    g = pages[t]  # (batch, max_pages, page_size, kvh, d)
    return g.reshape(g.shape[0], -1, *g.shape[3:])


def reference(xp, q, k_cache, v_cache, lengths, scale=None):
    acc = xp.float64 if q.dtype == xp.float64 else xp.float32
    q4 = q[:, None] if q.ndim == 3 else q
    qf, kf, vf = (xp.asarray(t).astype(acc) for t in (q4, k_cache, v_cache))
    b, n, h, d = qf.shape
    rep = h // kf.shape[2]
    kf, vf = xp.repeat(kf, rep, axis=2), xp.repeat(vf, rep, axis=2)
    s = xp.einsum("bthd,bjhd->bhtj", qf, kf) * acc(1.0 / math.sqrt(d) if scale is None else scale)
    lens = xp.clip(xp.asarray(lengths).astype(xp.int64), 0, kf.shape[1])
    j = xp.arange(kf.shape[1])[None, None, :]
    seen = j <= (lens[:, None, None] - n + xp.arange(n)[None, :, None])  # (b, t, j)
    s = xp.where(seen[:, None], s, -xp.inf)
    m = s.max(axis=-1, keepdims=True)
    e = xp.exp(s - xp.where(xp.isfinite(m), m, 0))
    den = e.sum(axis=-1, keepdims=True)
    o = xp.einsum("bhtj,bjhd->bthd", e / xp.where(den > 0, den, 1), vf)
    return (o[:, 0] if q.ndim == 3 else o).astype(q.dtype)


def paged_reference(xp, q, k_pages, v_pages, page_table, lengths, scale=None):
    return reference(xp, q, _gather(xp, k_pages, page_table), _gather(xp, v_pages, page_table), lengths, scale)


def append_reference(xp, k_cache, v_cache, k_new, v_new, positions):
    """The caches after the append, k then v raveled (one formula for both: stacked)."""
    kc, kn = xp.stack([k_cache, v_cache]), xp.stack([k_new, v_new])
    kn = kn[:, :, None] if kn.ndim == 4 else kn
    for b in range(kn.shape[1]):
        for t in range(kn.shape[2]):
            p = int(positions[b]) + t
            if 0 <= p < kc.shape[2]:
                kc[:, b, p] = kn[:, b, t]
    return kc.reshape(-1)  # (k then v raveled: as isthmus.ops.workloads.host_result reads the caches)


def _lengths(rng, b, cap, n):
    return rng.integers(n, cap + 1, size=b).astype(np.int32)


def _inputs(p, dt, rng):
    b, n, keys, h, kvh, d = (p[x] for x in SPEC.problem)
    q = sample(rng, (b, n, h, d), dt)
    return q, sample(rng, (b, keys, kvh, d), dt), sample(rng, (b, keys, kvh, d), dt), _lengths(rng, b, keys, n)


_PAGE = 16


def _paged_inputs(p, dt, rng):
    b, n, keys, h, kvh, d = (p[x] for x in SPEC.problem)
    max_pages = -(-keys // _PAGE)
    table = rng.permutation(b * max_pages).reshape(b, max_pages).astype(np.int32)
    return (sample(rng, (b, n, h, d), dt), sample(rng, (b * max_pages, _PAGE, kvh, d), dt),
            sample(rng, (b * max_pages, _PAGE, kvh, d), dt), table, _lengths(rng, b, max_pages * _PAGE, n))


_SIZES = Sizes(gpu={"batch": 16, "new": 1, "keys": 8192, "heads": 32, "kv_heads": 4, "head_dim": 128},
               cpu={"batch": 4, "new": 1, "keys": 2048, "heads": 8, "kv_heads": 2, "head_dim": 64},
               quick={"batch": 2, "new": 1, "keys": 512, "heads": 8, "kv_heads": 2, "head_dim": 64},
               tiny={"batch": 1, "new": 1, "keys": 16, "heads": 2, "kv_heads": 1, "head_dim": 16},
               odd=({"batch": 1, "new": 1, "keys": 1, "heads": 1, "kv_heads": 1, "head_dim": 8},
                    {"batch": 3, "new": 2, "keys": 77, "heads": 6, "kv_heads": 2, "head_dim": 24}))


def _moved(p, size):
    return size * 2 * p["batch"] * (p["keys"] * p["kv_heads"] + 2 * p["new"] * p["heads"]) * p["head_dim"]


SPEC = SPEC.completed(run=decode_attention, reference=reference, inputs=_inputs, sizes=_SIZES, moved=_moved,
                      tolerance=8.0, summary="attention of new tokens over a contiguous KV cache (flash decoding)")
PAGED = SPEC.completed(name="paged_decode_attention", run=paged_decode_attention, reference=paged_reference,
                       inputs=_paged_inputs,
                       summary="attention of new tokens over a paged KV cache (flash decoding)")


def _append_inputs(p, dt, rng):
    q, kc, vc, lengths = _inputs(p, dt, rng)
    b, n = p["batch"], p["new"]
    return kc, vc, sample(rng, (b, n, *kc.shape[2:]), dt), sample(rng, (b, n, *kc.shape[2:]), dt), lengths - n


APPEND = APPEND.completed(
    run=kv_append, reference=append_reference, inputs=_append_inputs, sizes=_SIZES, in_place=(0, 1),
    moved=lambda p, size: size * 4 * p["batch"] * p["new"] * p["kv_heads"] * p["head_dim"],
    summary="write new keys and values into a contiguous KV cache")
PAGED_APPEND = APPEND.completed(
    name="paged_kv_append", run=paged_kv_append,
    reference=lambda xp, kp, vp, kn, vn, table, positions: _paged_append_reference(xp, kp, vp, kn, vn, table, positions),
    inputs=lambda p, dt, rng: _paged_append_inputs(p, dt, rng),
    summary="write new keys and values into a paged KV cache")


def _paged_append_reference(xp, kp, vp, kn, vn, table, positions):
    pages = xp.stack([kp, vp])
    new = xp.stack([kn, vn])
    new = new[:, :, None] if new.ndim == 4 else new
    ps = pages.shape[2]
    for b in range(new.shape[1]):
        for t in range(new.shape[2]):
            p = int(positions[b]) + t
            if 0 <= p < table.shape[1] * ps:
                pages[:, int(table[b, p // ps]), p % ps] = new[:, b, t]
    return pages.reshape(-1)


def _paged_append_inputs(p, dt, rng):
    q, kp, vp, table, lengths = _paged_inputs(p, dt, rng)
    b, n = p["batch"], p["new"]
    return (kp, vp, sample(rng, (b, n, *kp.shape[2:]), dt), sample(rng, (b, n, *kp.shape[2:]), dt), table,
            lengths - n)


MMA = MMA.completed(run=decode_attention, reference=reference, inputs=_inputs, sizes=_SIZES, moved=_moved,
                    tolerance=8.0, library=False,
                    summary="decode_attention's tensor-core path (mma.sync, cp.async): float16 and bfloat16")
PAGED_MMA = MMA.completed(name="paged_decode_attention_mma", run=paged_decode_attention, reference=paged_reference,
                          inputs=_paged_inputs,
                          summary="paged_decode_attention's tensor-core path (mma.sync, cp.async)")
SPECS = (SPEC, PAGED, APPEND, PAGED_APPEND, MMA, PAGED_MMA)
