"""gemm_mma: tensor-core gemm for float16 and bfloat16 (f32 accumulation), batched, with operand
transposes: ``C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]``.

On devices with NVIDIA's ``mma.sync`` (CUDA, NVIDIA's OpenCL; ``Device.mma_sync``) the kernel uses
inline PTX, on Hopper under CUDA (``Device.wgmma``) warpgroup MMA for all but skinny problems; every
other device runs the portable path of the same source (``opencl/gemm_mma.cl``). Skinny problems with
a long K are split over K (partial products in scratch, then one combine launch).
``isthmus.ops.gemm`` comes here for 16-bit float inputs.

>>> a = dev.asarray(rng.standard_normal((64, 4096)).astype(ml_dtypes.bfloat16))
>>> w = dev.asarray(rng.standard_normal((11008, 4096)).astype(ml_dtypes.bfloat16))
>>> y = gemm_mma.run(a, w, trans_b=True, out_dtype="float32")      # a @ w.T, f32 result
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError, UnsupportedDtypeError
from .. import checks
from ..resolve import plan, resolve
from ..spec import Flag, OpSpec, Tunable

DTYPES = ("float16", "bfloat16")
# the operand layouts a call picks: each value set is its own tuning key (gemm lists the same flags)
FLAGS = (Flag("trans_a", "TRANS_A"), Flag("trans_b", "TRANS_B"))


def _tile(bm, bn, bk, wm, wn, stages, gm=8) -> dict:
    return dict(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, STAGES=stages, GM=gm, SWZ=1)


# Tiles by shape class on devices with mma.sync (H200: benchmarks/results/runs/2026-12-02-gemm-mma-h200/).
# Skinny problems (x @ W.T for a batch of rows) are bound by streaming the weights: small tiles and
# deep K-steps give the most work-groups; big squares want the largest tile whose ring fits, so
# each byte brought into local memory feeds the most tensor-core work.
_SKINNY = _tile(64, 64, 64, 2, 2, 3, gm=1)
_MID = _tile(128, 128, 32, 2, 2, 3)  # a 3-stage swizzled ring (48 KiB)
_BIG = _tile(128, 256, 32, 2, 4, 3)  # a 72 KiB ring: past the 48 KiB every device has
# Devices with no more than 48 KiB a work-group (local_mem_optin None: NVIDIA's OpenCL on a compute
# capability it has no limit for): every ring takes up to 128 bytes more to start on a 128-byte
# boundary, so 48 KiB rings do not fit; the same tiles with 2 stages, or half the K-step (32 KiB).
# (NVIDIA's OpenCL with the ring aligned, 4096^3 f16 on the H200: this tile 314-318 TFLOP/s, _MID
# 359-366, _BIG 362; benchmarks/results/runs/2026-12-03-gemm-mma-opencl-aligned/.)
_SKINNY_48K = _tile(64, 64, 32, 2, 2, 4, gm=1)
_MID_48K = dict(_tile(128, 128, 32, 2, 2, 2), PIPE=0)
# Hopper under CUDA (Device.wgmma): warpgroup MMA from local memory, a warpgroup per 64 rows, BK=64,
# rings of 160-192 KiB
_WG_BIG = dict(BM=128, BN=256, BK=64, WM=8, WN=1, STAGES=4, GM=8, WGMMA=1)
_WG_MID = dict(BM=128, BN=128, BK=64, WM=8, WN=1, STAGES=5, GM=8, WGMMA=1)


_SPLITS = (1, 2, 4, 8)  # SPLITK's values
_TILED, _ROWS = ("ROWS", (0,)), ("ROWS", (1,))
RING_ALIGN = 128  # bytes a static ring may take past its size to start on a 128-byte boundary (gemm_mma.cl)


def _splits(tiles: int, k: int, units: int) -> int:
    """K splits for a problem of ``tiles`` work-groups: doubled while they stay within two a compute
    unit and each split keeps 4096 of K (measured: x @ W.T with 16 or 64 rows and K = 11008 ran 64
    work-groups on the H200's 132 SMs at 0.4x torch), up to SPLITK's largest value."""
    s = 1
    while s < _SPLITS[-1] and tiles * s <= units and k // (s * 2) >= 4096:
        s *= 2
    return s


# x @ W.T with at most this many rows (a bucket) takes the rows kernel on devices with mma.sync
_ROWS_MAX = 16
_ROWS_DEFAULT = dict(ROWS=1, RM=16, RN=2, RK=8, RU=2)


def _rows_rule(m: int, n: int, k: int, units: int) -> dict:
    """The rows kernel for m (<= 64) rows: one pass over the rows, 16 columns and 8 warps (K slices)
    a work-group; K split over work-groups while they are fewer than the compute units."""
    p = dict(_ROWS_DEFAULT, RM=max(16, m))
    groups, splits = -(-n // (8 * p["RN"])), 1
    while groups * splits < units and k // (2 * splits) >= 2048 and splits < _SPLITS[-1]:
        splits *= 2
    return dict(p, SPLITK=splits)


def _rule(buckets: dict, device, dt, params: dict, flags: dict | None = None) -> dict:
    """The tile for a problem's shape class (see above); devices without mma.sync (the portable
    path) keep the defaults."""
    if not device.mma_sync:
        return {}
    m, n = buckets["m"], buckets["n"]
    small = device.local_mem_optin is None  # 48 KiB a work-group at most
    if m <= _ROWS_MAX and flags == {"trans_a": False, "trans_b": True}:
        return _rows_rule(m, n, buckets["k"], device.compute_units)
    if min(m, n) <= 64:
        skinny = _SKINNY_48K if small else _SKINNY
        tiles = -(-m // skinny["BM"]) * -(-n // skinny["BN"])
        return dict(skinny, SPLITK=_splits(tiles, buckets["k"], device.compute_units))
    if small:
        return _MID_48K
    if device.wgmma:
        return _WG_BIG if min(m, n) >= 4096 else _WG_MID
    return _BIG if min(m, n) >= 4096 else _MID


SPEC = OpSpec(
    name="gemm_mma", source="gemm_mma.cl", entries=("gemm_mma",), dtypes=DTYPES, variants=FLAGS,
    tunables=(# ROWS=1: the skinny x @ W.T kernel (no tile ring: W streamed from global memory)
              Tunable("ROWS", (0, 1), 0),
              *(Tunable(name, values, default, when=_TILED) for name, values, default in (
                  ("BM", (32, 64, 128, 256), 128), ("BN", (32, 64, 128, 256), 128), ("BK", (16, 32, 64), 32),
                  ("WM", (1, 2, 4, 8), 2), ("WN", (1, 2, 4), 2), ("STAGES", (2, 3, 4, 5, 6), 2),
                  ("GM", (1, 4, 8, 16), 8), ("WGMMA", (0, 1), 0))),
              # the mma.sync path's own choices (wgmma reads its operands from local memory itself)
              *(Tunable(name, (0, 1), default, when=(_TILED, ("WGMMA", (0,))))
                for name, default in (("LDSM", 1), ("ASYNC", 1), ("SWZ", 0), ("PIPE", 1))),
              # K splits: for the small tiles of problems with few of them (skinny x @ W.T), and the
              # rows kernel
              Tunable("SPLITK", _SPLITS, 1),
              # the rows kernel: RM rows a pass, RN 8-column blocks a warp, RK warps a work-group
              # (each a slice of K), RU 32-element K-steps a lane has in flight
              Tunable("RM", (16, 32, 64), 16, when=_ROWS), Tunable("RN", (1, 2, 4), 2, when=_ROWS),
              Tunable("RK", (1, 2, 4, 8), 8, when=_ROWS), Tunable("RU", (1, 2, 4), 2, when=_ROWS),
              # RP=1: the next K-steps' loads issued before this one's mma (twice the registers)
              Tunable("RP", (0, 1), 0, when=_ROWS)),
    problem=("m", "n", "k"),
    restrictions=("BM % (16 * WM) == 0 and BN % (16 * WN) == 0",
                  "32 * WM * WN <= max_work_group_size",
                  # the ring, either operand layout (SWZ=0 pads rows by 8 elements), up to the
                  # opt-in maximum where there is one (CUDA's dynamic shared memory, NVIDIA OpenCL's
                  # static arrays); WGMMA takes 1 KiB more to start its swizzle atoms on a 1024-byte
                  # boundary, a static ring up to 128 bytes more to start on a 128-byte one (counted
                  # everywhere: CUDA's dynamic ring starts on one and loses only the headroom)
                  "STAGES * 2 * ((BM + BN) * BK if SWZ or WGMMA else max(BM * (BK + 8), BK * (BM + 8))"
                  f" + max(BN * (BK + 8), BK * (BN + 8))) + 1024 * WGMMA + {RING_ALIGN} <= local_mem_optin",
                  # a warpgroup (4 warps of 16 rows) per 64 rows of the tile, whole 128-byte
                  # swizzle rows; the mma.sync path's own tunables stay at their defaults
                  "not WGMMA or (wgmma and BK == 64 and WN == 1 and WM * 16 == BM and BM % 64 == 0"
                  " and BN in (64, 128, 256) and STAGES >= 3)",
                  # what only wgmma's rings and warpgroups use, and splits only where few tiles meet a
                  # long K: the tuner's space stays the size it had without them elsewhere
                  "WGMMA or (STAGES <= 4 and WM <= 4)",
                  "SPLITK == 1 or (min(m, n) <= 64 and k >= 2048 * SPLITK)",
                  "SPLITK == 1 or ROWS or BM in (32, 64)",
                  # the rows kernel: x @ W.T only, a few rows; its warps' sums in local memory (f32),
                  # at most 24 16-byte loads a lane in flight (RP: two K-steps' worth)
                  "not ROWS or (TRANS_B and not TRANS_A and m <= 256)",
                  "not ROWS or (32 * RK <= max_work_group_size and 32 * RK * RM * RN <= local_mem_size"
                  " and RU * (RN + RM // 8) * (1 + RP) <= 24)",
                  "(BM // WM // 16) * (BN // WN // 8) <= 32",  # f32 accumulators per work-item <= 128
                  "m // BM < 65535"),
    storage=(("float16", "ushort"),),  # 16-bit patterns on every device: no `half` arithmetic anywhere
    cpu_defaults=(("BM", 32), ("BN", 32), ("BK", 16), ("WM", 1), ("WN", 2), ("GM", 1), ("LDSM", 0), ("ASYNC", 0)),
    rule=_rule,
)
_F32 = lookup("float32")
_MAX_BATCH = 65535  # CUDA's gridDim.z
SCRATCH_MAX = 16 << 20  # split-K partials up to this size live in the thread's scratch memory


def smem_bytes(p: dict, ta: bool, tb: bool) -> int:
    """Bytes of the kernel's local-memory ring (its SMEM_ELEMS * 2) for config ``p``."""
    wgmma = p.get("WGMMA", 0)
    pad = 0 if p.get("SWZ") or wgmma else 8
    a_rows, a_cols = (p["BK"], p["BM"]) if ta else (p["BM"], p["BK"])
    b_rows, b_cols = (p["BN"], p["BK"]) if tb else (p["BK"], p["BN"])
    return p["STAGES"] * 2 * (a_rows * (a_cols + pad) + b_rows * (b_cols + pad)) + 1024 * wgmma


def grid(m: int, n: int, batch: int, p: dict):
    if p.get("ROWS"):
        nt = 32 * p["RK"]
        return (-(-n // (8 * p["RN"])) * nt, -(-m // p["RM"]), batch), (nt, 1, 1)
    nt = 32 * p["WM"] * p["WN"]
    return (-(-n // p["BN"]) * nt, -(-m // p["BM"]), batch), (nt, 1, 1)


class _Shape(NamedTuple):
    batch: int
    m: int
    n: int
    k: int
    sa: int  # elements between batches (0: operand shared by every batch)
    sb: int
    c_shape: tuple


def _variant(dev, dt, ta: bool, tb: bool, shape: _Shape, out_dt) -> tuple:
    """The -D macros this call decides: layouts, output type, whether 16-byte copies are safe
    (every operand's contiguous dimension a multiple of 8 elements), and the instruction path."""
    lda = shape.m if ta else shape.k
    ldb = shape.k if tb else shape.n
    return (("TRANS_A", int(ta)), ("TRANS_B", int(tb)), ("VEC", int(lda % 8 == 0 and ldb % 8 == 0)),
            ("C_F32", int(out_dt is _F32)), ("MMA_PTX", int(dev.mma_sync)),
            ("DYN_SMEM", int(dev.local_mem_dynamic)))  # CUDA: the ring in dynamic shared memory


def _steps(dev, dt, shape: _Shape, variant: tuple, out_dt) -> tuple:
    """(kernel, global, local, (m, n, k), strides, C's shape, C's bytes, combine): combine is None,
    or split-K's second launch (kernel, global, local, its leading arguments, partials' bytes)."""
    m, n, k = shape.m, shape.n, shape.k
    fam = SPEC.variant(trans_a=bool(dict(variant)["TRANS_A"]), trans_b=bool(dict(variant)["TRANS_B"]))
    params, kernels = resolve(fam, dev, dt, {"m": max(m, 1), "n": max(n, 1), "k": max(k, 1)}, variant)
    splits = params.get("SPLITK", 1)
    if splits > 1 and shape.batch * splits > _MAX_BATCH:  # the grid's z holds batch x splits
        params = dict(params, SPLITK=1)
        splits, kernels = 1, fam.kernels(dev, dt, {**params, **dict(variant)})
    kern = kernels["gemm_mma"]
    if dict(variant)["DYN_SMEM"]:  # the size the kernel's ring needs, given at every launch (the rows kernel: none)
        kern.dynamic_local_bytes = 0 if params.get("ROWS") else smem_bytes(params, dict(variant)["TRANS_A"],
                                                                           dict(variant)["TRANS_B"])
    c_size = int(np.prod(shape.c_shape, dtype=np.int64))
    combine = None
    if splits > 1:
        total = shape.batch * m * n
        wg = min(256, dev.max_work_group_size)
        combine = (kern.program.kernel("gemm_mma_combine"), (min(-(-total // wg), _MAX_BATCH) * wg,), (wg,),
                   (np.int64(m * n), np.int32(shape.batch)), total * splits * 4)
    g, loc = grid(m, n, shape.batch * splits, params)
    return (kern, g, loc, (np.int32(m), np.int32(n), np.int32(k)),
            (np.int64(shape.sa), np.int64(shape.sb), np.int64(m * n)), shape.c_shape, c_size * out_dt.np.itemsize,
            combine)


@contextmanager
def partials(dev, nbytes: int):
    """Memory for split-K's partial products: the thread's scratch memory up to SCRATCH_MAX, else a
    buffer of its own, freed once the queued work that reads it is done (a graph being captured
    keeps it)."""
    if nbytes <= SCRATCH_MAX:
        yield dev._temporary(nbytes)
        return
    own = Buffer._allocate(dev, (nbytes,), lookup("uint8"), nbytes)
    try:
        yield own
    finally:
        own.close()


def _shape(a: Buffer, b: Buffer, ta: bool, tb: bool) -> _Shape:
    """Batch and matrix sizes of op(a) @ op(b); a 2-D operand is shared by every batch."""
    a_batch, (ar, ac) = (a.shape[0] if a.ndim == 3 else None), a.shape[-2:]
    b_batch, (br, bc) = (b.shape[0] if b.ndim == 3 else None), b.shape[-2:]
    m, k = (ac, ar) if ta else (ar, ac)
    k2, n = (bc, br) if tb else (br, bc)
    if k != k2:
        raise InvalidArgumentError(
            f"gemm: op(a) is {m}x{k} and op(b) is {k2}x{n} (a {a.shape}, trans_a={ta}; b {b.shape}, trans_b={tb}); "
            f"the inner dimensions must match")
    if a_batch is not None and b_batch is not None and a_batch != b_batch:
        raise InvalidArgumentError(f"gemm: a has batch {a_batch} and b has batch {b_batch}; they must match "
                                   f"(or pass one operand 2-D to share it across the batch)")
    batch = a_batch if a_batch is not None else b_batch
    if batch is not None and batch > _MAX_BATCH:
        raise InvalidArgumentError(f"gemm: batch {batch} is over {_MAX_BATCH}; split it into several calls")
    c_shape = (m, n) if batch is None else (batch, m, n)
    return _Shape(batch or 1, m, n, k, 0 if a_batch is None else m * k, 0 if b_batch is None else k * n, c_shape)


def _operand(what: str, value) -> Buffer:
    buf = checks.buffer("gemm", what, value)
    if buf.ndim not in (2, 3):
        raise InvalidArgumentError(f"gemm: {what} must be 2-D or 3-D (batched), got shape {buf.shape}")
    return buf


def _out_dtype(dt, out_dtype, c):
    if out_dtype is None:
        return c._dt if c is not None and c._dt is _F32 else dt
    out = lookup(out_dtype)
    if out is not dt and out is not _F32:
        raise UnsupportedDtypeError(f"gemm: out_dtype {out.name} is not supported for {dt.name} inputs; "
                                    f"use None (the input dtype, {dt.name}) or float32")
    return out


def run(a, b, c=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, out_dtype=None):
    """``alpha * op(a) @ op(b) + beta * c`` into ``c`` (or a new buffer) for float16/bfloat16 ``a``, ``b``.

    a, b: 2-D or 3-D (a leading batch dimension; a 2-D operand is shared by every batch).
    out_dtype: None (``c``'s dtype, else the input dtype) or float32. beta == 0 never reads ``c``."""
    a, b = _operand("a", a), _operand("b", b)
    checks.like("gemm", a, "b", b)
    dev, dt = a.device, a._dt
    if dt.name not in DTYPES:
        raise UnsupportedDtypeError(f"gemm on tensor cores takes {' or '.join(DTYPES)}, got {dt.name}")
    out_dt = _out_dtype(dt, out_dtype, c)
    ta, tb = checks.flag("gemm", "trans_a", trans_a), checks.flag("gemm", "trans_b", trans_b)
    shape = _shape(a, b, ta, tb)
    alpha, beta = checks.scalar("gemm", "alpha", alpha, "float"), checks.scalar("gemm", "beta", beta, "float")
    if c is None:
        if beta != 0:
            raise InvalidArgumentError("gemm: beta != 0 needs a c to scale")
    else:
        c = checks.buffer("gemm", "c", c)
        if c.device is not dev:
            raise InvalidArgumentError(f"gemm: c lives on {c.device.id}, a and b on {dev.id}; copy it with .to({dev.id!r})")
        if c._dt is not out_dt:
            raise InvalidArgumentError(f"gemm: c has dtype {c.dtype}, the result is {out_dt.name} "
                                       f"(out_dtype={out_dtype!r}, inputs {dt.name})")
        if c.shape != shape.c_shape:
            raise InvalidArgumentError(f"gemm: c has shape {c.shape}, expected {shape.c_shape} for "
                                       f"a {a.shape} (trans_a={ta}) @ b {b.shape} (trans_b={tb})")
        checks.disjoint("gemm", c, "c", a=a, b=b)
    variant = _variant(dev, dt, ta, tb, shape, out_dt)
    kern, g, loc, (m, n, k), (sa, sb, sc), c_shape, nbytes, combine = plan(
        SPEC, (dev, dt.name, shape, variant), lambda: _steps(dev, dt, shape, variant, out_dt))
    new = c is None
    if new:
        c = Buffer._allocate(dev, c_shape, out_dt, nbytes)
    if nbytes:
        try:
            if combine is None:
                dev.launch(kern, g, loc, [m, n, k, alpha, beta, a, sa, b, sb, c, sc])
            else:
                ckern, cg, cloc, (mn, batch), pbytes = combine
                with partials(dev, pbytes) as part:
                    dev.launch(kern, g, loc, [m, n, k, 1.0, 0.0, a, sa, b, sb, part, sc])
                    dev.launch(ckern, cg, cloc, [mn, batch, alpha, beta, part, c])
        except Exception:
            if new:  # (alpha or beta refused: the result is no one's)
                c.close()
            raise
    return c


def reference(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, alpha=1.0, beta=0.0,
              trans_a=False, trans_b=False, out_dtype=None) -> np.ndarray:
    """float64 NumPy result, rounded to the output dtype."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if trans_a:
        a64 = np.swapaxes(a64, -1, -2)
    if trans_b:
        b64 = np.swapaxes(b64, -1, -2)
    out = alpha * (a64 @ b64)
    if c is not None and beta != 0:
        out = out + beta * c.astype(np.float64)
    dt = np.dtype(out_dtype) if out_dtype is not None else (c.dtype if c is not None else a.dtype)
    return out.astype(dt)


# gemm_mma is reached through isthmus.ops.gemm (16-bit float inputs), not an op of its own
SPEC = SPEC.completed(run=run, reference=reference, library=False,
                                 summary="tensor-core gemm for float16 and bfloat16 (isthmus.ops.gemm)")
SPECS = (SPEC,)
