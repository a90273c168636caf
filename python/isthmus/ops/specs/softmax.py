"""softmax: numerically stable row-wise softmax of a 2-D buffer into a new buffer.

Three regimes of one kernel (softmax.cl), picked by a rule on the row length and refined by
tuning:

- narrow rows (up to 512 columns): RPG > 1 rows per work-group, a team of WG/RPG items per row,
  each row held in registers (one read + one write per element);
- middle rows: one row per work-group, held in registers (CACHE > 0, WG*VPT*CACHE covers it);
- wide rows (vocabulary widths, past 8192 columns on a GPU): split rows, SPLIT > 1 work-groups
  per row, each holding a chunk of it in registers; the groups of a row exchange their chunk's
  (max, sum) through a small workspace (one read and one write per element at any width);
- rows wider than 64 chunks, and CPUs: two passes, the second one last-read first so that what
  the cache still holds is re-read from there; configs that hold part of the row in registers and
  stream the rest are in the tuning space.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ...buffer import Buffer
from .. import checks
from ..resolve import plan, resolve
from ..spec import ROWS_COLS, OpSpec, Tunable, sample

# Registers a work-group may hold a row in (bytes); and the least a partly held (wide) row holds.
_HOLD_MAX = 131072
_HOLD_WIDE = 65536
# Rows up to this many columns (bucket) run as narrow rows: several per work-group.
_NARROW_MAX = 512
# A GPU splits rows longer than this (bucket) into chunks of it, each held by a work-group (8192
# columns: the row length a held config reads at 97% of copy on the H200).
_CHUNK = 8192
_SPLIT_MAX = 64


def rule(buckets: dict, device, dt, params: dict | None = None) -> dict:
    """The config a problem calls for before any tuning. CPU devices run a row per work-item in
    three vectorized passes (ROWLOOP), in groups of about rows/8 (so that a few cores each take
    several groups); GPUs pick by row length (the module's docstring)."""
    cap = 1 << (min(1024, device.max_work_group_size).bit_length() - 1)  # the largest WG allowed
    if device.kind == "cpu":
        wg = max(1, min(64, buckets["rows"] // 8, cap))
        return {"WG": wg, "RPG": wg, "VPT": 4, "CACHE": 0, "ROWLOOP": 1}
    b, acc = buckets["cols"], 8 if dt is not None and dt.acc in ("double", "long") else 4
    if b <= _NARROW_MAX:
        # teams of b/16 holding 16 each from 128 columns (94% of copy at 262144x128 on the H200,
        # 93% at 65536x500); below, teams of 8 (teams of 2 reading 16 each: 27% at 1048576x32);
        # up to 8 columns one item per row, reading its row's consecutive elements
        tpr = b // 16 if b >= 128 else 8 if b > 8 else 1
        k, wg = b // tpr, min(256, cap)
        vpt = min(8, k)
        if tpr <= wg:
            return {"WG": wg, "RPG": wg // tpr, "VPT": vpt, "CACHE": k // vpt}
    wg = min(cap, 128)
    if _CHUNK < b <= wg * 64 * min(_SPLIT_MAX, wg):
        # split rows: chunks of 8192 columns, each held by a group of 128 items (64 values an item);
        # on the H200 93% of copy at 4096x32000 and 85% at 1024x128256 under CUDA, 91% and 83% under
        # NVIDIA's OpenCL (groups of 256 holding 32: 84% / 78%, 81% / 85%; of 64 holding 64, chunks
        # of 4096: 92% / 80%, 90% / 79%); smaller groups where the device allows no more
        return {"WG": wg, "RPG": 1, "VPT": 8, "CACHE": 8, "SPLIT": b // (wg * 64)}
    if b * acc <= _HOLD_MAX:
        wg = min(cap, max(128, b // 16))
        if b <= wg * 8 * 8:
            return {"WG": wg, "RPG": 1, "VPT": 8, "CACHE": max(1, b // (wg * 8))}
    # longer than 64 chunks: two passes (a partly held row measured slower on the H200)
    return {"WG": cap, "RPG": 1, "VPT": 8, "CACHE": 0}


# CACHE > 0 holds the row in registers between the reduction and the write (one read per element);
# its restrictions keep the held configs to those that hold the whole row, each once, except for
# rows longer than any config holds: there the configs that hold at least _HOLD_WIDE bytes of it.
# ROWLOOP (CPUs) runs a row per item, RPG = WG rows per group, its other tunables at their defaults.
# SPLIT > 1 (GPUs: on a CPU the groups of a row rarely run at once) holds a row in SPLIT groups,
# each chunk entirely and more than half full.  Every restriction on cols depends only on its
# power-of-two bucket (configs are memoized per bucket).
SPEC = OpSpec(
    name="softmax", source="softmax.cl", entries=("softmax",), dtypes=("float32", "float64", "float16", "bfloat16"),
    tunables=(Tunable("WG", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4),
              Tunable("CACHE", (0, 1, 2, 4, 8), 0), Tunable("RPG", (1, 2, 4, 8, 16, 32, 64, 128, 256), 1),
              Tunable("SPLIT", (1, 2, 4, 8, 16, 32, _SPLIT_MAX), 1, when=("RPG", (1,))),
              Tunable("ROWLOOP", (0, 1), 0, when=("CACHE", (0,)))),
    problem=("rows", "cols"),
    restrictions=("WG <= max_work_group_size", "2 * WG * acc_size <= local_mem_size", "cols + WG * VPT < 2**31",
                  "RPG <= WG", "RPG == 1 or CACHE > 0 or ROWLOOP == 1", "RPG == 1 or 2 * cols > WG // RPG",
                  "WG >= 32 or ROWLOOP == 1",
                  "ROWLOOP == 0 or (is_cpu and RPG == WG and WG <= 256 and VPT == 4 and CACHE == 0 and SPLIT == 1)",
                  f"CACHE == 0 or cols <= WG // RPG * VPT * CACHE * SPLIT or (SPLIT == 1 and RPG == 1 and "
                  f"cols * acc_size > {_HOLD_MAX} and WG * VPT * CACHE * acc_size >= {_HOLD_WIDE})",
                  "CACHE <= 1 or VPT == 8",
                  "CACHE == 0 or VPT * CACHE == 1 or 2 * cols > WG // RPG * VPT * CACHE * SPLIT",
                  "SPLIT == 1 or (RPG == 1 and CACHE > 0 and SPLIT <= WG and not is_cpu "
                  "and 2 * cols > WG * VPT * CACHE * SPLIT)",
                  f"WG * VPT * CACHE * acc_size <= {_HOLD_MAX}"),
    cpu_defaults=(("WG", 64),),
    rule=rule,
)


def grid(rows: int, p: dict) -> tuple[tuple, tuple]:
    wg, rpg = p["WG"], p.get("RPG", 1)
    return (-(-rows // rpg) * p.get("SPLIT", 1) * wg,), (wg,)


def workspace_nbytes(rows: int, p: dict, dt) -> int:
    """softmax.cl's ws: a ticket, then each chunk's (max, sum) in 32-bit words of 64-bit slots;
    0 (no workspace: the kernel does not read it) when each row is one group's."""
    split = p.get("SPLIT", 1)
    return 8 * (1 + 2 * (8 if dt.acc == "double" else 4) // 4 * rows * split) if split > 1 else 0


def _steps(dev, dt, rows: int, cols: int, in_place: bool = False) -> tuple:
    """(kernel, global, local, rows, cols, bytes, workspace bytes): the workspace (Device._workspace;
    split rows only) stays with the kernel (the split rows' tagged (max, sum) pairs need no reset between launches)."""
    shfl = (("SHFL", int(dev.mma_sync)),)  # NVIDIA's inline PTX: warp shuffles merge narrow rows' teams
    params, kernels = resolve(SPEC, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)}, shfl)
    if in_place and params.get("SPLIT", 1) > 1:
        # a split row's group that reads the whole row itself (its siblings late) could read a
        # chunk a sibling already wrote: in place, one group per row (the same config's chunk
        # held, the rest of the row streamed; correct for any row, slower for wide ones)
        params = {**params, "SPLIT": 1}
        kernels = SPEC.kernels(dev, dt, {**params, **dict(shfl)})
    wsn = workspace_nbytes(rows, params, dt)
    return (kernels["softmax"], *grid(rows, params), np.int32(rows), np.int32(cols), rows * cols * dt.np.itemsize,
            wsn)


def softmax(x, out=None):
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""
    if x.__class__ is not Buffer or x._dt is None or len(x.shape) != 2:  # (checks.buffer's quick test, inline)
        x = checks.buffer("softmax", "x", x, ndim=2)
    dev, dt, shape = x.device, x._dt or x._check(), x.shape  # (closed since the check: raises)
    # in place (out is x's memory, views included) is fine: each item reads the elements it writes
    # before it writes them (split rows excepted: see _steps); a partial overlap (CUDA views) is not
    # (checks.in_place is asked unless out's byte range is apart from x's: see run._apart)
    in_place = out is x or (out is not None and (out.__class__ is not Buffer or (
        out._ptr < x._ptr + x.nbytes and x._ptr < out._ptr + out.nbytes)) and checks.in_place(
        "softmax", checks.buffer("softmax", "out", out), "x", x))
    key = (dev, dt.name, shape, True) if in_place else (dev, dt.name, shape)
    k, g, loc, rows, cols, nbytes, ws_nbytes = plan(
        SPEC, key, lambda: _steps(dev, dt, *shape, in_place))
    if out is None:
        y = Buffer._allocate(dev, shape, dt, nbytes)
    elif out.__class__ is Buffer and out._dt is dt and out.device is dev and out.shape == shape:
        y = out
    else:
        y = checks.output("softmax", out, x, shape, nbytes=nbytes)
    if nbytes:
        dev.launch(k, g, loc, [rows, cols, x, y, dev._workspace(k, ws_nbytes) if ws_nbytes else None])
    return y


def reference(xp, x):
    """NumPy's (or CuPy's) softmax: a NaN or +inf anywhere in a row makes the row NaN; all -inf gives NaN."""
    acc = xp.asarray(x).astype(xp.float64 if x.dtype == xp.float64 else xp.float32, copy=False)
    with getattr(xp, "errstate", _no_errstate)(invalid="ignore"):
        e = xp.exp(acc - acc.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype, copy=False)


@contextlib.contextmanager
def _no_errstate(**_):
    yield


# what runs, checks and measures the op, added to its declaration above
SPEC = SPEC.completed(
    run=softmax, reference=reference, inputs=lambda p, dt, rng: (sample(rng, (p["rows"], p["cols"]), dt),),
    sizes=ROWS_COLS, moved=lambda p, size: 2 * p["rows"] * p["cols"] * size,
    summary="row-wise softmax of a 2-D buffer")
