"""softmax: numerically stable row-wise softmax of a 2-D buffer into a new buffer."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import checks
from .family import Family, Tunable, recall, recipes, resolve

# CACHE > 0 holds the row in registers between the reduction and the write (one read per element);
# its restrictions keep the held configs to those that hold the whole row, each once (see softmax.cl).
FAMILY = Family(
    name="softmax", source="softmax.cl", entries=("softmax",), dtypes=("float32", "float64", "float16"),
    tunables=(Tunable("WG", (32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8), 4),
              Tunable("CACHE", (0, 1, 2, 4, 8), 0)),
    problem=("rows", "cols"),
    restrictions=("WG <= max_work_group_size", "2 * WG * acc_size <= local_mem_size", "cols + WG * VPT < 2**31",
                  "CACHE == 0 or cols <= WG * VPT * CACHE",
                  "CACHE <= 1 or VPT == 8",
                  "CACHE == 0 or VPT * CACHE == 1 or 2 * cols > WG * VPT * CACHE",
                  "WG * VPT * CACHE * acc_size <= 65536"),
    cpu_defaults=(("WG", 64),),
)


_RECIPES = recipes()


class _Recipe(NamedTuple):
    kernel: Any
    global_size: tuple
    local_size: tuple
    rows: np.int32
    cols: np.int32
    nbytes: int


def _recipe(dev, dt, rows: int, cols: int) -> _Recipe:
    params, kernels = resolve(FAMILY, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)})
    wg = params["WG"]
    return _Recipe(kernels["softmax"], (rows * wg,), (wg,), np.int32(rows), np.int32(cols),
                   rows * cols * dt.np.itemsize)


def run(x, out=None):
    x = checks.buffer("softmax", "x", x, ndim=2)
    dev, dt, shape = x.device, x._dt or x._check(), x.shape  # (closed since the check: raises)
    key = (dev, dt.name, shape)
    (k, g, loc, rows, cols, nbytes), fast = recall(_RECIPES, key, dev, lambda: _recipe(dev, dt, *shape))
    # in place is fine: each item reads the elements it writes before the row's reduction
    y = checks.output("softmax", out, x, shape, nbytes=nbytes)
    if nbytes:
        if fast:
            dev._launch(k, g, loc, [rows, cols, x._arg or x._launch_arg(), y._arg or y._launch_arg()])
        else:  # the general path: a graph being captured sees the buffers through _buffer_arg
            dev._launch(k, g, loc, [rows, cols, dev._buffer_arg(x), dev._buffer_arg(y)])
    return y


def reference(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)
