"""scale: out = alpha * x, for any float dtype (16-bit ones in float arithmetic, one rounding)."""
from __future__ import annotations

from ..spec import ELEMENTS, Launch, OpSpec, Output, Scalar, Tensor, Tunable, sample

_STEP = 64  # elements a LAYOUT 1 work-item handles per step (four 16-wide vectors, scale.cl)


def grid(p: dict, c: dict) -> tuple[tuple[int], tuple[int]]:
    n, wg = p["n"], c["WG"]
    if c.get("LAYOUT", 0) == 1:  # a chunk per work-item: few work-groups
        return (max(1, min(c["GROUPS"], -(-n // (wg * _STEP)))) * wg,), (wg,)
    return (-(-n // wg) * wg,), (wg,)


def reference(xp, alpha, x):
    acc = xp.float64 if x.dtype == xp.float64 else xp.float32
    return (acc(alpha) * x.astype(acc, copy=False)).astype(x.dtype, copy=False)


SPEC = OpSpec(
    name="scale", source="scale.cl", entries=("scale",), dtypes=("float32", "float64", "float16", "bfloat16"),
    args=(Scalar("alpha", sample=2.0), Tensor("x")), problem={"n": "x.size"},
    out=Output(like="x", alias=True),  # out may be x itself
    launch=Launch("scale", grid, args=("n:long", "alpha", "x", "out")),
    # LAYOUT 0: an element per work-item; 1 (CPUs: OpenCL C vectors, which the CUDA prelude lacks):
    # a contiguous chunk per work-item, in GROUPS work-groups at most
    tunables=(Tunable("WG", (16, 64, 128, 256, 512, 1024), 256), Tunable("LAYOUT", (0, 1), 0),
              Tunable("GROUPS", (1, 2, 4, 8, 16, 32, 64, 128), 16, when=("LAYOUT", (1,)))),
    restrictions=("WG <= max_work_group_size", "LAYOUT == 0 or is_cpu", "WG >= 64 or LAYOUT == 1"),
    # PoCL 3.1, Intel Xeon, one core: LAYOUT 1 at 0.95x NumPy's multiply where LAYOUT 0 ran at 0.73x
    # (benchmarks/results/runs/2026-12-03-memory-bound-pocl-shipped/memory_bound_pocl-*)
    cpu_defaults=(("WG", 16), ("LAYOUT", 1), ("GROUPS", 16)),
    reference=reference, inputs=lambda p, dt, rng: (sample(rng, p["n"], dt),), sizes=ELEMENTS,
    moved=lambda p, size: 2 * p["n"] * size, summary="out = alpha * x",
    doc="""out = alpha * x, into a new Buffer or ``out`` (which may be x itself); returns it.

    >>> y = isthmus.ops.scale(0.5, x)
    """,
)
