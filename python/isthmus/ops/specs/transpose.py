"""transpose: 2-D transpose through local-memory tiles into a new buffer."""
from __future__ import annotations

from ..spec import ROWS_COLS, Launch, OpSpec, Output, Tensor, Tunable, sample


def grid(p: dict, c: dict):
    rows, cols, t, br = p["rows"], p["cols"], c["TILE"], c["BLOCK_ROWS"]
    if rows == 1 or cols == 1:  # a copy, TILE*TILE elements per group
        tiles = -(-rows * cols // (t * t))
    else:
        tiles = -(-rows // t) * -(-cols // t)
    return (tiles * t, br), (t, br)


def reference(xp, x):
    return xp.ascontiguousarray(x.T)


SPEC = OpSpec(
    name="transpose", source="transpose.cl", entries=("transpose", "transpose_vector"),
    dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"),
    args=(Tensor("x", ndim=2),), problem={"rows": "x.shape[0]", "cols": "x.shape[1]"},
    out=Output(like="x", shape=lambda p: (p["cols"], p["rows"])),  # not x itself
    launch=Launch(lambda p: "transpose_vector" if p["rows"] == 1 or p["cols"] == 1 else "transpose", grid,
                  args=("rows:int", "cols:int", "x", "out")),
    tunables=(Tunable("TILE", (8, 16, 32, 64), 64), Tunable("BLOCK_ROWS", (1, 2, 4, 8, 16, 32), 8),
              Tunable("ORDER", (0, 1), 1)),
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
    reference=reference, inputs=lambda p, dt, rng: (sample(rng, (p["rows"], p["cols"]), dt),), sizes=ROWS_COLS,
    moved=lambda p, size: 2 * p["rows"] * p["cols"] * size, summary="the transpose of a 2-D buffer",
    doc="""The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x).

    >>> t = isthmus.ops.transpose(x)
    """,
)
