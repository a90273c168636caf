"""softmax: numerically stable row-wise softmax of a 2-D buffer into a new buffer.

Three regimes of one kernel (softmax.cl), picked by a rule on the row length and refined by
tuning:

- narrow rows (up to 512 columns): RPG > 1 rows per work-group, a team of WG/RPG items per row,
  each row held in registers (one read + one write per element);
- middle rows: one row per work-group, held in registers (CACHE > 0, WG*VPT*CACHE covers it);
- wide rows (past what the registers hold, 32768 float32 columns): two passes, the second one
  last-read first so that what the cache still holds is re-read from there; configs that hold
  part of the row in registers and stream the rest are in the tuning space.
"""
from __future__ import annotations

import numpy as np

from .. import checks
from ..resolve import plan, resolve
from ..spec import Family, Tunable, sample

# Registers a work-group may hold a row in (bytes); and the least a partly held (wide) row holds.
_HOLD_MAX = 131072
_HOLD_WIDE = 65536
# Rows up to this many columns (bucket) run as narrow rows: several per work-group.
_NARROW_MAX = 512


def rule(buckets: dict, device, dt, params: dict | None = None) -> dict:
    """The config a problem calls for before any tuning. CPU devices take the narrow-row variant
    in work-groups of 64 (about 2x the one-row-per-group default at 20000x128 on PoCL) and keep
    their defaults for longer rows."""
    cpu = device.kind == "cpu"
    b, acc = buckets["cols"], 8 if dt is not None and dt.acc in ("double", "long") else 4
    cap = 1 << (min(1024, device.max_work_group_size).bit_length() - 1)  # the largest WG allowed
    if b <= _NARROW_MAX:
        # teams of b/16 holding 16 each from 128 columns (94% of copy at 262144x128 on the H200,
        # 93% at 65536x500); below, teams of 8 (teams of 2 reading 16 each: 27% at 1048576x32);
        # up to 8 columns one item per row, reading its row's consecutive elements
        tpr = b // 16 if b >= 128 else 8 if b > 8 else 1
        k, wg = b // tpr, min(64 if cpu else 256, cap)
        vpt = min(8, k)
        if tpr <= wg:
            return {"WG": wg, "RPG": wg // tpr, "VPT": vpt, "CACHE": k // vpt}
    if cpu:
        return {}
    if b * acc <= _HOLD_MAX:
        wg = min(cap, max(128, b // 16))
        if b <= wg * 8 * 8:
            return {"WG": wg, "RPG": 1, "VPT": 8, "CACHE": max(1, b // (wg * 8))}
    # longer than any config holds: two passes (a partly held row measured slower on the H200)
    return {"WG": cap, "RPG": 1, "VPT": 8, "CACHE": 0}


# CACHE > 0 holds the row in registers between the reduction and the write (one read per element);
# its restrictions keep the held configs to those that hold the whole row, each once, except for
# rows longer than any config holds: there the configs that hold at least _HOLD_WIDE bytes of it.  Every
# restriction on cols depends only on its power-of-two bucket (configs are memoized per bucket).
FAMILY = Family(
    name="softmax", source="softmax.cl", entries=("softmax",), dtypes=("float32", "float64", "float16"),
    tunables=(Tunable("WG", (32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4),
              Tunable("CACHE", (0, 1, 2, 4, 8), 0), Tunable("RPG", (1, 2, 4, 8, 16, 32, 64, 128, 256), 1)),
    problem=("rows", "cols"),
    restrictions=("WG <= max_work_group_size", "2 * WG * acc_size <= local_mem_size", "cols + WG * VPT < 2**31",
                  "RPG <= WG", "RPG == 1 or CACHE > 0", "RPG == 1 or 2 * cols > WG // RPG",
                  f"CACHE == 0 or cols <= WG // RPG * VPT * CACHE or (RPG == 1 and cols * acc_size > {_HOLD_MAX} "
                  f"and WG * VPT * CACHE * acc_size >= {_HOLD_WIDE})",
                  "CACHE <= 1 or VPT == 8",
                  "CACHE == 0 or VPT * CACHE == 1 or 2 * cols > WG // RPG * VPT * CACHE",
                  f"WG * VPT * CACHE * acc_size <= {_HOLD_MAX}"),
    cpu_defaults=(("WG", 64),),
    rule=rule,
)


def grid(rows: int, p: dict) -> tuple[tuple, tuple]:
    wg, rpg = p["WG"], p.get("RPG", 1)
    return (-(-rows // rpg) * wg,), (wg,)


def _steps(dev, dt, rows: int, cols: int) -> tuple:
    params, kernels = resolve(FAMILY, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)})
    return (kernels["softmax"], *grid(rows, params), np.int32(rows), np.int32(cols), rows * cols * dt.np.itemsize)


def softmax(x, out=None):
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""
    x = checks.buffer("softmax", "x", x, ndim=2)
    dev, dt, shape = x.device, x._dt or x._check(), x.shape  # (closed since the check: raises)
    k, g, loc, rows, cols, nbytes = plan(FAMILY, (dev, dt.name, shape), lambda: _steps(dev, dt, *shape))
    # in place is fine: each item reads the elements it writes before it writes them
    y = checks.output("softmax", out, x, shape, nbytes=nbytes)
    if nbytes:
        dev.launch(k, g, loc, [rows, cols, x, y])
    return y


def reference(x: np.ndarray) -> np.ndarray:
    """NumPy's softmax: a NaN or +inf anywhere in a row makes the row NaN; all -inf gives NaN."""
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


# what runs, checks and measures the op, added to its declaration above
FAMILY = SPEC = FAMILY.completed(
    run=softmax, reference=reference, inputs=lambda p, dt, rng: (sample(rng, (p["rows"], p["cols"]), dt),),
    moved=lambda p, size: 2 * p["rows"] * p["cols"] * size, summary="row-wise softmax of a 2-D buffer",
    into=lambda out, x: softmax(x, out=out),
    numpy=lambda s: (lambda e: e / e.sum(axis=1, keepdims=True))(np.exp(s - s.max(axis=1, keepdims=True))))
SPECS = (SPEC,)
run = softmax
