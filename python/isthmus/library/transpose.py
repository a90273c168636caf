"""transpose: 2-D transpose through local-memory tiles into a new buffer."""
from __future__ import annotations

import numpy as np

from . import checks
from .family import Family, Tunable, resolve

FAMILY = Family(
    name="transpose", source="transpose.cl", entries=("transpose",),
    dtypes=("float32", "float64", "float16", "int32", "int64", "uint8"),
    tunables=(Tunable("TILE", (8, 16, 32, 64), 64), Tunable("BLOCK_ROWS", (1, 2, 4, 8, 16, 32), 8)),
    problem=("rows", "cols"),
    restrictions=("TILE % BLOCK_ROWS == 0", "TILE * BLOCK_ROWS <= max_work_group_size",
                  "TILE * (TILE + 1) * 8 <= local_mem_size", "rows // TILE < 65535"),
    storage=(("float16", "ushort"),),  # a transpose only moves bits
    cpu_defaults=(("TILE", 16), ("BLOCK_ROWS", 4)),
)


def grid(rows: int, cols: int, p: dict):
    t, br = p["TILE"], p["BLOCK_ROWS"]
    return (-(-cols // t) * t, -(-rows // t) * br), (t, br)


def run(x, out=None):
    x = checks.buffer("transpose", "x", x, ndim=2)
    dev, dt = x.device, x._dt
    rows, cols = x.shape
    params, kernels = resolve(FAMILY, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)})
    y = checks.output("transpose", out, x, (cols, rows), alias_ok=False)
    if rows and cols:
        g, loc = grid(rows, cols, params)
        kernels["transpose"]._enqueue(g, loc, [np.int32(rows), np.int32(cols), dev._buffer_arg(x), dev._buffer_arg(y)])
    return y


def reference(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.T)
