"""axpy: y = a*x + y in place (integers wrap like NumPy)."""
from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Tunable, sample


def grid(n: int, p: dict) -> tuple[tuple[int], tuple[int]]:
    wg, vpt = p["WG"], p["VPT"]
    return ((-(-n // (wg * vpt))) * wg,), (wg,)


def _steps(dev, dt, n: int) -> tuple:
    params, kernels = resolve(SPEC, dev, dt, {"n": n})
    return (kernels["axpy"], *grid(n, params), np.int64(n))


def axpy(a, x, y):
    """y = a*x + y, in place; returns y."""
    x = checks.buffer("axpy", "x", x)
    y = checks.buffer("axpy", "y", y)
    checks.like("axpy", x, "y", y)
    checks.disjoint("axpy", y, "y", x=x)  # (axpy.cl's x and y are restrict pointers)
    a = checks.scalar("axpy", "a", a, (x._dt or x._check()).acc)
    nbytes = x.nbytes
    if y.nbytes != nbytes:
        raise InvalidArgumentError(f"axpy: x has {x.size} elements, y has {y.size}")
    if nbytes == 0:
        return y
    dev, dt = x.device, x._dt or x._check()  # (closed since the check: raises)
    k, g, loc, n = plan(SPEC, (dev, dt.name, nbytes), lambda: _steps(dev, dt, x.size))
    dev.launch(k, g, loc, [n, a, x, y])
    return y


def reference(a, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        if x.dtype.itemsize == 2:  # float16, bfloat16: f32 arithmetic, one rounding
            return (np.float32(a) * x.astype(np.float32) + y.astype(np.float32)).astype(x.dtype)
        return (x.dtype.type(a) * x + y).astype(x.dtype)


SPEC = OpSpec(
    name="axpy", source="axpy.cl", entries=("axpy",),
    dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"),
    tunables=(Tunable("WG", (64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4)),
    problem=("n",),
    restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64), ("VPT", 8)),
    run=axpy, reference=reference,
    inputs=lambda p, dt, rng: (sample(rng, p["n"], dt), sample(rng, p["n"], dt)),
    call=lambda x, y: axpy(2.0, x, y), expect=lambda x, y: reference(2.0, x, y), in_place=(1,),
    moved=lambda p, size: 3 * p["n"] * size, numpy=lambda x, y: np.add(2.0 * x, y),
    summary="y = a*x + y, in place",
)
FAMILY = SPEC  # the names before specs (isthmus.library.axpy)
run = axpy
