"""gemm: row-major C = alpha*op(A)@op(B) + beta*C for any M, N, K, optionally batched.

op(A) is A or A.T (``trans_a``: A stored K x M), op(B) is B or B.T (``trans_b``: B stored N x K,
so ``x @ W.T`` with row-major weights needs no transpose). A leading batch dimension on a, b and
c runs every entry in one launch; a 2-D operand next to a 3-D one is shared by every entry
(weights). When beta == 0, C is not read (it may hold garbage, NaN included), as in BLAS.

Variants (the tunable VARIANT; the rule below picks one when no tuned config is found):
0 tiled (local memory; GPUs), 1 split-K (the tiled kernel over K chunks plus a combine kernel:
M or N small, as in batch-1..64 inference, leaves too few tiles to fill a GPU), 2 cpu (explicit
vectors, no local memory: CPU OpenCL such as PoCL), 3 rows (GEMV-like: a warp per few columns of
C, K split across its lanes, every row at once: ``x @ W.T`` with a few rows reads W once).
"""
from __future__ import annotations

import math

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError, UnsupportedDtypeError
from .. import checks
from ..resolve import plan, resolve
from ..spec import MNK, OpSpec, Tunable, bucket, problem_bucket, sample
from . import gemm_mma

_TILED = ("VARIANT", (0, 1))
_CPU = ("VARIANT", (2,))
_ROWS = ("VARIANT", (3,))
# x @ W.T with at most this many rows (and W at least 8x wider than that, so reading W is the work)
# takes the rows variant on a GPU: at 1 row it runs at 1.11-1.18x cuBLAS on the H200; at 16 rows its
# lanes re-read 16 rows of x per row of W and the split-K tiles are faster (0.026 against 0.051 ms,
# benchmarks/results/runs/2026-12-02-gemm-f32-shapes/gemm_variants-cuda-nvidia-h200*.md)
_ROWS_MAX = 4


def _rule(buckets: dict, device, dt, params: dict, flags: dict | None = None) -> dict:
    """The defaults for a problem's shape (its buckets): CPUs take the cpu variant; on GPUs a few
    rows times transposed weights take the rows variant, other shapes the tiled one (split over K
    where the tiles alone leave the device idle). Every choice below was measured on the H200
    (benchmarks/results/runs/2026-12-02-gemm-f32-shapes/gemm_variants-*)."""
    m, n, k = buckets["m"], buckets["n"], buckets["k"]
    if params.get("VARIANT") == 2:
        if m < params["CM"]:  # few rows (GEMV-like): no work on rows that are not there
            return dict(params, CM=bucket(m), CR=1)
        return dict(params, CR=min(params["CR"], bucket(-(-m // params["CM"]))))
    units = max(1, int(device.compute_units or 1))
    if m <= _ROWS_MAX and flags == {"trans_a": False, "trans_b": True} and n >= 8 * m:
        return _rows_rule(m, n, units, params)
    return _tiled_rule(m, n, k, units, dt, params)


def _tiled_rule(m: int, n: int, k: int, units: int, dt, params: dict) -> dict:
    """The tiled kernel's tiles for (buckets) m, n, k, split over K where the tiles alone leave the
    device idle."""
    tm, tn, wptm, wptn, ks = _skinny_tiles(m, n, k, units) if min(m, n) <= 64 else _big_tiles(m, n, k, units)
    # double-buffered tiles: 8-byte accumulators take the short K-step to fit CUDA's 48 KB
    tk = 8 if getattr(dt, "acc", "float") == "double" else params["TK"]
    return dict(params, VARIANT=1 if ks > 1 else 0, TM=tm, TN=tn, WPTM=wptm, WPTN=wptn, TK=tk,
                KS=ks if ks > 1 else params["KS"])


def _splits(groups: int, k: int, want: float, cap: int, least: int) -> int:
    """K splits: doubled while the work-groups stay under ``want``, up to ``cap``, each split
    keeping at least ``least`` of K."""
    ks = 1
    while groups * ks < want and ks < cap and k // (2 * ks) >= least:
        ks *= 2
    return ks


def _tiles(m: int, n: int, tm: int, tn: int) -> int:
    return -(-m // tm) * -(-n // tn)


def _skinny_tiles(m: int, n: int, k: int, units: int) -> tuple[int, int, int, int, int]:
    """(TM, TN, WPTM, WPTN, KS) when M or N is at most 64 (the small side first): 16 x 32 tiles of
    2 x 4 with 8 splits for 16 or fewer (about 1.0x cuBLAS at 16 rows), 32 x 64 of 4 x 4 with 4
    splits up to 32, 64 x 128 of 8 x 8 up to 64 with the splits that make 2 groups a compute unit
    (0.8x cuBLAS at 64 rows, where 64 x 64 tiles reach 0.6-0.75x). The sizes are buckets: N = 11008
    counts as 16384, so 4 splits there, 8 at N = 4096."""
    small = min(m, n)
    if small <= 32:
        a, b, wa, wb = (16, 32, 2, 4) if small <= 16 else (32, 64, 4, 4)
        cap, least, want = (8, 256, math.inf) if small <= 16 else (4, 512, math.inf)
    else:
        a, b, wa, wb = 64, 128, 8, 8
        cap, least, want = 8, 512, 2 * units
    tm, tn, wptm, wptn = (a, b, wa, wb) if m <= n else (b, a, wb, wa)
    return tm, tn, wptm, wptn, _splits(_tiles(m, n, tm, tn), k, want, cap, least)


def _big_tiles(m: int, n: int, k: int, units: int) -> tuple[int, int, int, int, int]:
    """(TM, TN, WPTM, WPTN, KS) when M and N exceed 64: 128 x 128 tiles of 8 x 8 (0.87x cuBLAS at
    2048^3-8192^3), split over K up to 1.5 groups a compute unit where K allows (1024^3: 4 splits,
    +14% over smaller tiles); else halved until the tiles come within 7/8 of the compute units
    (512^3: 32 x 64, +30% over 32 x 32 on NVIDIA's OpenCL), then split if they still do not."""
    close = units * 7 / 8
    tm, tn = min(128, bucket(m)), min(128, bucket(n))
    ks = _splits(_tiles(m, n, tm, tn), k, 1.5 * units, 8, 256)
    if _tiles(m, n, tm, tn) * ks < units:
        while _tiles(m, n, tm, tn) < close and max(tm, tn) > 32:
            if tm >= tn:
                tm //= 2
            else:
                tn //= 2
        ks = _splits(_tiles(m, n, tm, tn), k, close, 32, 256)
    wptm, wptn = (8 if tm >= 128 else max(1, min(4, tm // 8))), (8 if tn >= 128 else max(1, min(4, tn // 8)))
    return tm, tn, wptm, wptn, ks


# A batch of small matrices (32-1024 a side) fills the device with its entries' tiles: without a
# tuned config, their tiles are the rule's for the device's compute units shared among the entries
# (the rule sees one matrix: the tuning key has no batch)
BATCH_AWARE = True


def _batched_rule(fam, dev, dt, problem: dict, params: dict, batch: int) -> dict:
    """``params`` (the tiled kernel's, for one matrix), or where they are the rule's (no tuned or
    forced config) the tiles for ``batch`` entries: chosen as for one matrix on a device with
    ceil(compute units / batch) units, the big-tile choice even for small matrices."""
    from ..resolve import _forced, config_source

    if (not BATCH_AWARE or batch <= 1 or _forced.get() is not None or dev.kind == "cpu"
            or not 32 <= min(problem["m"], problem["n"]) <= max(problem["m"], problem["n"]) <= 1024):
        return params  # (small matrices only: a batch of skinny ones keeps its split-K tiles)
    if any(src(fam, dev, dt, problem) is not None for src in config_source):
        return params  # a tuned config stands
    b = dict(zip(fam.problem, problem_bucket(fam, problem)))
    units = max(1, -(-max(1, int(dev.compute_units or 1)) // batch))
    tm, tn, wptm, wptn, ks = _big_tiles(b["m"], b["n"], b["k"], units)
    tk = 8 if getattr(dt, "acc", "float") == "double" else params["TK"]
    out = dict(params, VARIANT=1 if ks > 1 else 0, TM=tm, TN=tn, WPTM=wptm, WPTN=wptn, TK=tk,
               KS=ks if ks > 1 else params["KS"])
    return out if out != params and fam.is_valid(out, dev, problem, dt) else params


def _rows_rule(m: int, n: int, units: int, params: dict) -> dict:
    """The rows variant for m rows (a bucket, <= 4): every row in one pass (RM = m), as many columns
    per warp (RN) as keep the work-groups at two or more per compute unit, at most 32 sums a lane."""
    rn = 4
    while rn > 1 and (rn * m > 32 or -(-n // (params["RW"] * rn)) < 2 * units):
        rn //= 2
    return dict(params, VARIANT=3, RM=m, RN=rn)


SPEC = OpSpec(
    name="gemm", source="gemm.cl", entries=("gemm", "gemm_combine", "gemm_cpu", "gemm_rows"),
    dtypes=("float32", "float64", "float16", "bfloat16"), variants=gemm_mma.FLAGS,  # 16-bit: gemm_mma (families)
    tunables=(Tunable("VARIANT", (0, 1, 2, 3), 0),
              Tunable("TM", (8, 16, 32, 64, 128), 128, _TILED), Tunable("TN", (8, 16, 32, 64, 128), 128, _TILED),
              Tunable("TK", (8, 16, 32), 16, _TILED), Tunable("WPTM", (1, 2, 4, 8), 8, _TILED),
              Tunable("WPTN", (1, 2, 4, 8), 8, _TILED), Tunable("VLD", (0, 1), 1, _TILED),
              Tunable("KS", (2, 4, 8, 16, 32), 4, ("VARIANT", (1,))),
              Tunable("CM", (1, 2, 4, 8), 4, _CPU), Tunable("CN", (1, 2, 4, 8), 2, _CPU),
              Tunable("CV", (4, 8, 16), 8, _CPU), Tunable("CR", (1, 2, 4, 8, 16), 1, _CPU),
              Tunable("RM", (1, 2, 4, 8, 16), 4, _ROWS), Tunable("RN", (1, 2, 4, 8), 2, _ROWS),
              Tunable("RW", (4, 8), 8, _ROWS)),
    problem=("m", "n", "k"),
    restrictions=("(TM // WPTM) * (TN // WPTN) <= max_work_group_size",
                  "TM % WPTM == 0 and TN % WPTN == 0",
                  # a group of fewer than 32 work-items idles most of a GPU's warp and of the vector lanes
                  # PoCL packs work-items into; the rule and every tuned config use 32 or more, and PoCL
                  # took 106 s to compile TM32 TN8 W8x8 TK32 (4 work-items): the tuner's random search
                  # met it (the 2-minute tuning tests of the GPU pass on PoCL 5.0, issue 26 item 13)
                  "VARIANT > 1 or (TM // WPTM) * (TN // WPTN) >= 32",
                  "VARIANT > 1 or 2 * (TK * (TM + 4) + TK * (TN + 4)) * acc_size <= local_mem_size",  # 2 buffers
                  "VARIANT != 3 or (RM * RN <= 32 and 32 * RW <= max_work_group_size"
                  " and RW * 32 * (RM * RN + 1) * acc_size <= local_mem_size)",
                  "VARIANT != 2 or is_cpu"),  # a work-item per block: a GPU would idle (tests still force it)
    # measured on PoCL (Xeon, AVX-512): 8 rows x 2 vectors of 16 = 16 zmm accumulators; 16 row
    # blocks share each packed panel of B
    cpu_defaults=(("VARIANT", 2), ("CM", 8), ("CN", 2), ("CV", 16), ("CR", 16)),
    rule=_rule,
)
# CUDA runs at most 65535 work-groups along y and z; the kernels walk the rest of their tiles and
# batch entries in a loop over the group id, so every backend launches at most this many there.
GRID_YZ_MAX = 65535


def family_for(trans_a: bool, trans_b: bool) -> OpSpec:
    """The gemm family compiled for these transposes (its own tuning key: the defines differ)."""
    return SPEC.variant(trans_a=bool(trans_a), trans_b=bool(trans_b))


def grid(m: int, n: int, p: dict, batch: int = 1, trans_b: bool = False):
    """(global, local) of the kernel that VARIANT launches."""
    if p["VARIANT"] == 2:
        rows, cols = p["CM"] * p["CR"], p["CN"] * p["CV"]
        return (-(-n // cols), min(-(-m // rows), GRID_YZ_MAX), min(batch, GRID_YZ_MAX)), (1, 1, 1)
    if p["VARIANT"] == 3:
        lanes = 32 * p["RW"]
        return ((-(-n // (p["RW"] * p["RN"])) * lanes, min(-(-m // p["RM"]), GRID_YZ_MAX), min(batch, GRID_YZ_MAX)),
                (lanes, 1, 1))
    lx, ly = p["TN"] // p["WPTN"], p["TM"] // p["WPTM"]
    ks = p["KS"] if p["VARIANT"] == 1 else 1
    return ((-(-n // p["TN"]) * lx, min(-(-m // p["TM"]), GRID_YZ_MAX) * ly, min(batch * ks, GRID_YZ_MAX)),
            (lx, ly, 1))


def _needs_grid_loop(params: dict, m: int, batch: int) -> bool:
    """Whether the tiled kernel must walk M tiles or batch x split entries past its grid (a build of
    its own, GRID_LOOP=1, so that the common launch carries no loop), or the rows kernel, which has
    no such build (gemm.cl says why), would launch more row passes or batch entries than the grid holds."""
    if params["VARIANT"] == 3:
        return -(-m // params["RM"]) > GRID_YZ_MAX or batch > GRID_YZ_MAX
    ks = params["KS"] if params["VARIANT"] == 1 else 1
    return params["VARIANT"] in (0, 1) and (-(-m // params["TM"]) > GRID_YZ_MAX or batch * ks > GRID_YZ_MAX)


def _steps(dev, dt, ta: bool, tb: bool, batch: int, m: int, n: int, k: int, sa: int, sb: int, sc: int,
           c_shape: tuple) -> tuple:
    """(launch, combine launch or None, C's shape and bytes, split-K partials' bytes): a launch is
    (kernel, global, local, its arguments with None where a, b, c and the partials go)."""
    fam, problem = family_for(ta, tb), {"m": max(m, 1), "n": max(n, 1), "k": max(k, 1)}
    params, kernels = resolve(fam, dev, dt, problem)
    if batch > 1 and params.get("VARIANT") in (0, 1):
        batched = _batched_rule(fam, dev, dt, problem, params, batch)
        if batched is not params:
            params, kernels = batched, fam.kernels(dev, dt, batched)
    if _needs_grid_loop(params, m, batch):
        if params["VARIANT"] == 3:  # the rows kernel walks no grid: the tiled kernel's loop does
            b = dict(zip(fam.problem, problem_bucket(fam, problem)))
            params = _tiled_rule(b["m"], b["n"], b["k"], max(1, int(dev.compute_units or 1)), dt, params)
        if _needs_grid_loop(params, m, batch):
            kernels = fam.kernels(dev, dt, {**params, "GRID_LOOP": 1})
        else:
            kernels = fam.kernels(dev, dt, params)
    g, loc = grid(m, n, params, batch, tb)
    kern = kernels[{2: "gemm_cpu", 3: "gemm_rows"}.get(params["VARIANT"], "gemm")]
    # alpha = 1 and beta = 0 packed once (the call replaces them when it passes others)
    head = [np.int32(m), np.int32(n), np.int32(k), kern._convert(3, 1.0), kern._convert(4, 0.0)]
    strides = [np.int32(batch), np.int64(sa), np.int64(sb), np.int64(sc)]
    c_nbytes = batch * m * n * dt.np.itemsize
    if params["VARIANT"] in (2, 3):
        return (kern, g, loc, (*head, None, None, None, *strides)), None, c_shape, c_nbytes, 0
    ks = params["KS"] if params["VARIANT"] == 1 else 1
    per_split = -(-k // ks)
    kchunk = -(-per_split // params["TK"]) * params["TK"]  # whole K-steps, so no chunk splits one
    first = (kern, g, loc, (*head, None, None, None, *strides, np.int32(ks), np.int32(kchunk), None))
    if ks == 1:  # (P unused: C stands in for it)
        return first, None, c_shape, c_nbytes, 0
    total = batch * m * n
    wg = min(256, dev.max_work_group_size)
    combine = (kernels["gemm_combine"], (min(-(-total // wg), GRID_YZ_MAX) * wg,), (wg,),
               (np.int64(total), np.int32(ks), None, None, None, None))
    return first, combine, c_shape, c_nbytes, ks * total * (8 if dt.acc == "double" else 4)


_DIM_LIMIT, _BATCH_LIMIT = 2**31 - 256, 2**26  # m, n, k and batch entries the kernels count with 32-bit ints


def _shapes(a: Buffer, b: Buffer, trans_a: bool, trans_b: bool) -> tuple[int, int, int, int, int, int]:
    """(batch, m, n, k, sa, sb) of a and b, or an error that says which dimensions disagree."""
    ash, bsh = a.shape, b.shape
    a3, b3 = len(ash) == 3, len(bsh) == 3
    if a3 and b3 and ash[0] != bsh[0]:
        raise InvalidArgumentError(f"gemm: a is {a.shape} and b is {b.shape}; batched operands must have the same "
                                   f"leading (batch) dimension")
    batch = ash[0] if a3 else bsh[0] if b3 else 1
    am, ak = (ash[-1], ash[-2]) if trans_a else (ash[-2], ash[-1])
    bk, bn = (bsh[-1], bsh[-2]) if trans_b else (bsh[-2], bsh[-1])
    if ak != bk:
        what_a = "a's rows (trans_a)" if trans_a else "a's columns"
        what_b = "b's columns (trans_b)" if trans_b else "b's rows"
        raise InvalidArgumentError(f"gemm: a is {a.shape} and b is {b.shape}; {what_a} ({ak}) must equal "
                                   f"{what_b} ({bk})")
    if max(am, bn, ak) >= _DIM_LIMIT or batch >= _BATCH_LIMIT:
        for name, v, limit in (("m", am, _DIM_LIMIT), ("n", bn, _DIM_LIMIT), ("k", ak, _DIM_LIMIT),
                               ("batch", batch, _BATCH_LIMIT)):
            if v >= limit:
                raise InvalidArgumentError(f"gemm: {name} = {v} is too large (at most {limit - 1}: the kernels count "
                                           f"tiles and batch entries with 32-bit ints)")
    return batch, am, bn, ak, am * ak if a3 else 0, bk * bn if b3 else 0


def _check_out_dtype(out_dtype, dt) -> None:
    if out_dtype is None:
        return
    try:
        want = lookup(out_dtype)
    except UnsupportedDtypeError as exc:
        raise UnsupportedDtypeError(f"gemm: out_dtype {out_dtype!r}: {exc}") from None
    if want is not dt:
        raise UnsupportedDtypeError(f"gemm: out_dtype {want.name} with {dt.name} inputs is not supported; the result "
                                    f"has the inputs' dtype (pass out_dtype=None or {dt.name!r})")


def gemm(a, b, c=None, alpha=1.0, beta=0.0, *, trans_a=False, trans_b=False, out_dtype=None):
    """Row-major C = alpha*op(A)@op(B) + beta*C; allocates C when not given; returns C.

    op(A) = A.T with ``trans_a`` (A stored K x M), op(B) = B.T with ``trans_b`` (B stored N x K):
    ``gemm(x, w, trans_b=True)`` is ``x @ w.T`` for row-major weights, with no transpose kernel.
    3-D operands are batched over their leading dimension in one launch (a 2-D operand next to a
    3-D one is shared by every entry); C is then (batch, M, N).

    >>> y = isthmus.ops.gemm(x, w, trans_b=True)          # (16, 4096) @ (11008, 4096).T
    >>> c = isthmus.ops.gemm(a3, b3)                       # (64, M, K) @ (64, K, N)
    """
    family = _OTHER_FAMILIES.get(getattr(getattr(a, "_dt", None), "name", None))
    if family is not None:  # 16-bit floats: the tensor-core family's own run
        return family.run(a, b, c, alpha, beta, trans_a=trans_a, trans_b=trans_b, out_dtype=out_dtype)
    ta = trans_a if trans_a.__class__ is bool else checks.flag("gemm", "trans_a", trans_a)
    tb = trans_b if trans_b.__class__ is bool else checks.flag("gemm", "trans_b", trans_b)
    # (checks.buffer's and checks.like's quick tests inline: the checks themselves where one fails)
    if a.__class__ is not Buffer or a._dt is None:
        a = checks.buffer("gemm", "a", a)
    if b.__class__ is not Buffer or b._dt is None:
        b = checks.buffer("gemm", "b", b)
    if not (1 < len(a.shape) < 4 and 1 < len(b.shape) < 4):
        for name, x in (("a", a), ("b", b)):
            if len(x.shape) not in (2, 3):
                raise InvalidArgumentError(f"gemm: {name} must be 2-D or 3-D (batched), got shape {x.shape}")
    if b.device is not a.device or b._dt is not a._dt:
        checks.like("gemm", a, "b", b)
    dev, dt = a.device, a._dt
    if out_dtype is not None:
        _check_out_dtype(out_dtype, dt)
    batch, m, n, k, sa, sb = _shapes(a, b, ta, tb)
    c_shape = (batch, m, n) if len(a.shape) == 3 or len(b.shape) == 3 else (m, n)
    if alpha.__class__ not in _PLAIN or alpha != 1 or beta.__class__ not in _PLAIN or beta != 0:
        alpha, beta = _scalars(alpha, beta, dt.acc)
    if c is not None:
        if c.__class__ is not Buffer or c._dt is None:
            c = checks.buffer("gemm", "c", c)
        if c.device is not a.device or c._dt is not a._dt:
            checks.like("gemm", a, "c", c)
        if c.shape != c_shape:
            raise InvalidArgumentError(f"gemm: c has shape {c.shape}, expected {c_shape}")
        cp, ce = c._ptr, c._ptr + c.nbytes  # (checks.disjoint where c's byte range meets a's or b's: run._apart)
        if (cp < a._ptr + a.nbytes and a._ptr < ce) or (cp < b._ptr + b.nbytes and b._ptr < ce):
            checks.disjoint("gemm", c, "c", a=a, b=b)
    elif beta != 0:
        raise InvalidArgumentError("gemm: beta != 0 needs a c to scale")
    first, combine, c_shape, c_nbytes, partial_nbytes = plan(
        SPEC, (dev, dt.name, ta, tb, batch, m, n, k, sa, sb, len(c_shape)),
        lambda: _steps(dev, dt, ta, tb, batch, m, n, k, sa, sb, m * n, c_shape))
    new = c is None
    if new:
        c = Buffer._allocate(dev, c_shape, dt, c_nbytes)
    if not c_nbytes:
        return c
    try:
        _launch(dev, first, combine, partial_nbytes, alpha, beta, a, b, c)
    except Exception:
        if new:  # (alpha or beta refused: the result is no one's)
            c.close()
        raise
    return c


_PLAIN = (int, float)  # numbers whose 1 and 0 are the steps' packed alpha and beta (not bool, not NumPy's)


def _scalars(alpha, beta, ctype: str) -> tuple:
    """alpha and beta checked (numbers the kernels' ``ctype`` holds) and converted to it, except the
    defaults 1 and 0 (which the steps hold packed)."""
    if alpha.__class__ not in _PLAIN or alpha != 1:
        alpha = checks.scalar("gemm", "alpha", alpha, ctype)
    if beta.__class__ not in _PLAIN or beta != 0:
        beta = checks.scalar("gemm", "beta", beta, ctype)
    return alpha, beta


def _launch(dev, first, combine, partial_nbytes: int, alpha, beta, a, b, c) -> None:
    """The launches: one kernel, or split-K's partial sums (into scratch, or a buffer of their own
    when large) then their combination into C."""
    kernel, g, loc, args = first
    args = list(args)
    if alpha.__class__ not in _PLAIN or alpha != 1:  # (1 and 0: the packed ones the steps hold)
        args[3] = alpha
    if beta.__class__ not in _PLAIN or beta != 0:
        args[4] = beta
    args[5], args[6], args[7] = a, b, c
    if combine is None:
        if len(args) > 12:  # the tiled kernel: C stands in for the partials it does not use
            args[14] = c
        dev.launch(kernel, g, loc, args)
        return
    with gemm_mma.partials(dev, partial_nbytes) as part:
        args[14] = part
        dev.launch(kernel, g, loc, args)
        ckernel, cg, cloc, cargs = combine
        dev.launch(ckernel, cg, cloc, [cargs[0], cargs[1], alpha, beta, part, c])


def reference(xp, a, b, c=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    """In the kernels' accumulator type (float64 for float64, else float32), rounded to a's dtype."""
    dtype = a.dtype
    acc = xp.float64 if dtype == xp.float64 else xp.float32
    a, b = a.astype(acc, copy=False), b.astype(acc, copy=False)
    if trans_a:
        a = xp.swapaxes(a, -1, -2)
    if trans_b:
        b = xp.swapaxes(b, -1, -2)
    out = xp.matmul(a, b)
    if alpha != 1:
        out = alpha * out
    if c is not None and beta != 0:
        out = out + beta * c.astype(acc)
    return out.astype(dtype, copy=False)


def _inputs(p: dict, dt, rng, trans_a: bool = False, trans_b: bool = False) -> tuple:
    """a and b for problem ``p`` as the call's layouts store them (a K x M with trans_a, b N x K with trans_b)."""
    return (sample(rng, (p["k"], p["m"]) if trans_a else (p["m"], p["k"]), dt),
            sample(rng, (p["n"], p["k"]) if trans_b else (p["k"], p["n"]), dt))


# what runs, checks and measures the op, added to its declaration above; float16 and bfloat16 run
# the tensor-core family
SPEC = SPEC.completed(
    run=gemm, reference=reference, inputs=_inputs, out_arg="c", sizes=MNK, families=tuple((dt, gemm_mma.SPEC) for dt in gemm_mma.DTYPES),
    moved=lambda p, size: (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]) * size,
    flops=lambda p: 2 * p["m"] * p["n"] * p["k"], tolerance=1.0,
    summary="C = alpha*op(A)@op(B) + beta*C, batched, row-major")
# (dtype name -> family, for the dtypes whose family is not SPEC: what gemm() hands on, one dict lookup)
_OTHER_FAMILIES = {name: spec for name, spec in SPEC.families if spec is not SPEC}
