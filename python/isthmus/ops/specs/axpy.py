"""axpy: y = a*x + y in place (integers wrap like NumPy)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ...kernel import convert_scalar
from .. import checks
from ..spec import Family, Tunable, recall, recipes, resolve

FAMILY = Family(
    name="axpy", source="axpy.cl", entries=("axpy",),
    dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"),
    tunables=(Tunable("WG", (64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4)),
    problem=("n",),
    restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64), ("VPT", 8)),
)
_RECIPES = recipes()


def grid(n: int, p: dict) -> tuple[tuple[int], tuple[int]]:
    wg, vpt = p["WG"], p["VPT"]
    return ((-(-n // (wg * vpt))) * wg,), (wg,)


class _Recipe(NamedTuple):
    kernel: Any
    global_size: tuple
    local_size: tuple
    n: np.int64
    a: Any  # the Param `a` (converts the scalar)


def _recipe(dev, dt, n: int) -> _Recipe:
    params, kernels = resolve(FAMILY, dev, dt, {"n": n})
    k = kernels["axpy"]
    g, loc = grid(n, params)
    return _Recipe(k, g, loc, np.int64(n), k.params[1])


def run(a, x, y):
    x = checks.buffer("axpy", "x", x)
    y = checks.buffer("axpy", "y", y)
    checks.like("axpy", x, "y", y)
    nbytes = x.nbytes
    if y.nbytes != nbytes:
        raise InvalidArgumentError(f"axpy: x has {x.size} elements, y has {y.size}")
    if nbytes == 0:
        return y
    dev, dt = x.device, x._dt or x._check()  # (closed since the check: raises)
    key = (dev, dt.name, nbytes)
    (k, g, loc, n, param), fast = recall(_RECIPES, key, dev, lambda: _recipe(dev, dt, x.size))
    if fast:
        dev._launch(k, g, loc, [n, convert_scalar(a, param, "axpy: a"), x._arg or x._launch_arg(),
                                y._arg or y._launch_arg()])
    else:
        dev._launch(k, g, loc, [n, convert_scalar(a, param, "axpy: a"), dev._buffer_arg(x), dev._buffer_arg(y)])
    return y


def reference(a, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        if x.dtype.itemsize == 2:  # float16, bfloat16: f32 arithmetic, one rounding
            return (np.float32(a) * x.astype(np.float32) + y.astype(np.float32)).astype(x.dtype)
        return (x.dtype.type(a) * x + y).astype(x.dtype)
