"""softmax: numerically stable row-wise softmax of a 2-D buffer into a new buffer."""
from __future__ import annotations

import numpy as np

from . import checks
from .family import Family, Tunable, resolve

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


def run(x, out=None):
    x = checks.buffer("softmax", "x", x, ndim=2)
    dev, dt = x.device, x._dt
    rows, cols = x.shape
    params, kernels = resolve(FAMILY, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)})
    y = checks.output("softmax", out, x, x.shape)  # in place is fine: each item reads its elements first
    if rows and cols:
        wg = params["WG"]
        kernels["softmax"]._enqueue((rows * wg,), (wg,), [np.int32(rows), np.int32(cols), dev._buffer_arg(x),
                                                          dev._buffer_arg(y)])
    return y


def reference(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)
