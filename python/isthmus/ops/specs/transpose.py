"""transpose: 2-D transpose through local-memory tiles into a new buffer."""
from __future__ import annotations

import numpy as np

from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Tunable, sample


def grid(rows: int, cols: int, p: dict):
    t, br = p["TILE"], p["BLOCK_ROWS"]
    if rows == 1 or cols == 1:  # a copy, TILE*TILE elements per group
        tiles = -(-rows * cols // (t * t))
    else:
        tiles = -(-rows // t) * -(-cols // t)
    return (tiles * t, br), (t, br)


def _steps(dev, dt, rows: int, cols: int) -> tuple:
    params, kernels = resolve(SPEC, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)})
    kernel = kernels["transpose_vector" if rows == 1 or cols == 1 else "transpose"]
    return (kernel, *grid(rows, cols, params), np.int32(rows), np.int32(cols), (cols, rows),
            rows * cols * dt.np.itemsize)


def transpose(x, out=None):
    """The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x)."""
    x = checks.buffer("transpose", "x", x, ndim=2)
    dev, dt, shape = x.device, x._dt or x._check(), x.shape  # (closed since the check: raises)
    k, g, loc, rows, cols, out_shape, nbytes = plan(SPEC, (dev, dt.name, shape), lambda: _steps(dev, dt, *shape))
    y = checks.output("transpose", out, x, out_shape, nbytes=nbytes)
    checks.disjoint("transpose", y, x=x)
    if nbytes:
        dev.launch(k, g, loc, [rows, cols, x, y])
    return y


def reference(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.T)


SPEC = OpSpec(
    name="transpose", source="transpose.cl", entries=("transpose", "transpose_vector"),
    dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"),
    tunables=(Tunable("TILE", (8, 16, 32, 64), 64), Tunable("BLOCK_ROWS", (1, 2, 4, 8, 16, 32), 8),
              Tunable("ORDER", (0, 1), 1)),
    problem=("rows", "cols"),
    # no limit on rows or cols: the tiles are numbered along grid dimension 0 (see transpose.cl)
    restrictions=("TILE % BLOCK_ROWS == 0", "TILE * BLOCK_ROWS <= max_work_group_size",
                  "TILE * (TILE + 1) * 8 <= local_mem_size"),
    # ORDER 1 (tiles numbered down the rows): 12345x6789 at 81% of copy against 62% for ORDER 0 on
    # the H200, the same at 8192^2 (benchmarks/results/runs/2026-12-02-softmax-transpose-shapes-h200/)
    storage=(("float16", "ushort"),),  # a transpose only moves bits (bfloat16 is ushort already)
    # CPUs: 32x32 tiles, a work-group per tile, tiles along the columns: on PoCL (Intel Xeon, two
    # shared cores) 1.2-1.8x the 16x4 tiles at 512^2, 3086x1697 and 2048^2, interleaved in one run
    # (benchmarks/results/runs/2026-12-03-memory-bound-pocl-cpu-variants/memory-bound-pocl.md)
    cpu_defaults=(("TILE", 32), ("BLOCK_ROWS", 32), ("ORDER", 0)),
    run=transpose, reference=reference, inputs=lambda p, dt, rng: (sample(rng, (p["rows"], p["cols"]), dt),),
    moved=lambda p, size: 2 * p["rows"] * p["cols"] * size,
    into=lambda out, x: transpose(x, out=out), numpy=lambda x: np.ascontiguousarray(x.T),
    summary="the transpose of a 2-D buffer",
)
FAMILY = SPEC  # the name before specs
run = transpose
