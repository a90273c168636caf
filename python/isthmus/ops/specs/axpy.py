"""axpy: y = a*x + y in place (integers wrap like NumPy)."""
from __future__ import annotations

import contextlib

from ..spec import ELEMENTS, Launch, OpSpec, Output, Scalar, Tensor, Tunable, sample


def grid(p: dict, c: dict) -> tuple[tuple[int], tuple[int]]:
    wg, vpt = c["WG"], c["VPT"]
    return ((-(-p["n"] // (wg * vpt))) * wg,), (wg,)


def reference(xp, a, x, y):
    with getattr(xp, "errstate", _no_errstate)(over="ignore"):  # (16-bit overflow to inf; CuPy has none)
        if x.dtype.itemsize == 2:  # float16, bfloat16: f32 arithmetic, one rounding
            return (xp.float32(a) * x.astype(xp.float32) + y.astype(xp.float32)).astype(x.dtype)
        return x.dtype.type(a) * x + y  # (integers wrap like NumPy)


@contextlib.contextmanager
def _no_errstate(**_):
    yield


SPEC = OpSpec(
    name="axpy", source="axpy.cl", entries=("axpy",),
    dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"),
    args=(Scalar("a", sample=2.0), Tensor("x"), Tensor("y", size="n")), problem={"n": "x.size"},
    out=Output(like="y", in_place="y"),
    launch=Launch("axpy", grid, args=("n:long", "a", "x", "y")),
    tunables=(Tunable("WG", (64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4)),
    restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64), ("VPT", 8)),
    reference=reference, sizes=ELEMENTS,
    inputs=lambda p, dt, rng: (sample(rng, p["n"], dt), sample(rng, p["n"], dt)),
    moved=lambda p, size: 3 * p["n"] * size, summary="y = a*x + y, in place",
    doc="""y = a*x + y, in place; returns y.

    >>> isthmus.ops.axpy(2.0, x, y)
    """,
)
