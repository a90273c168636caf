"""axpy: y = a*x + y in place (integers wrap like NumPy)."""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..kernel import convert_scalar
from . import checks
from .family import Family, Tunable, resolve

FAMILY = Family(
    name="axpy", source="axpy.cl", entries=("axpy",),
    dtypes=("float32", "float64", "float16", "int32", "int64", "uint8"),
    tunables=(Tunable("WG", (64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4)),
    problem=("n",),
    restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64), ("VPT", 8)),
)


def grid(n: int, p: dict) -> tuple[tuple[int], tuple[int]]:
    wg, vpt = p["WG"], p["VPT"]
    return ((-(-n // (wg * vpt))) * wg,), (wg,)


def run(a, x, y):
    x = checks.buffer("axpy", "x", x)
    y = checks.buffer("axpy", "y", y)
    dev, dt = checks.same("axpy", x, y=y)
    n = x.size
    if y.size != n:
        raise InvalidArgumentError(f"axpy: x has {n} elements, y has {y.size}")
    if n == 0:
        return y
    params, kernels = resolve(FAMILY, dev, dt, {"n": n})
    k = kernels["axpy"]
    g, loc = grid(n, params)
    k._enqueue(g, loc, [np.int64(n), convert_scalar(a, k.params[1], "axpy: a"), dev._buffer_arg(x), dev._buffer_arg(y)])
    return y


def reference(a, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype == np.float16:
        return (np.float32(a) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    with np.errstate(over="ignore"):
        return (x.dtype.type(a) * x + y).astype(x.dtype)
