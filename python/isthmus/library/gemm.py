"""gemm: row-major C = alpha*A@B + beta*C for any M, N, K, tiled with register blocking.

When beta == 0, C is not read (it may hold garbage, NaN included), as in BLAS.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..buffer import Buffer
from ..errors import InvalidArgumentError
from ..kernel import convert_scalar
from . import checks, gemm_mma
from .family import Family, Tunable, recall, recipes, resolve

FAMILY = Family(
    name="gemm", source="gemm.cl", entries=("gemm",), dtypes=("float32", "float64", "float16"),
    tunables=(Tunable("TM", (16, 32, 64, 128), 128), Tunable("TN", (16, 32, 64, 128), 128),
              Tunable("TK", (8, 16, 32), 16), Tunable("WPTM", (1, 2, 4, 8), 8), Tunable("WPTN", (1, 2, 4, 8), 8)),
    problem=("m", "n", "k"),
    restrictions=("(TM // WPTM) * (TN // WPTN) <= max_work_group_size",
                  "TM % WPTM == 0 and TN % WPTN == 0",
                  "(TK * (TM + 4) + TK * TN) * acc_size <= local_mem_size",
                  "m // TM < 65535"),
    cpu_defaults=(("TM", 64), ("TN", 64), ("TK", 16), ("WPTM", 4), ("WPTN", 4)),
)
_RECIPES = recipes()


def grid(m: int, n: int, p: dict):
    lx, ly = p["TN"] // p["WPTN"], p["TM"] // p["WPTM"]
    return (-(-n // p["TN"]) * lx, -(-m // p["TM"]) * ly), (lx, ly)


class _Recipe(NamedTuple):
    kernel: Any
    global_size: tuple
    local_size: tuple
    m: np.int32
    n: np.int32
    k: np.int32
    alpha: Any  # the Params alpha and beta (convert the scalars)
    beta: Any
    c_shape: tuple
    c_nbytes: int


def _recipe(dev, dt, m: int, n: int, k: int) -> _Recipe:
    params, kernels = resolve(FAMILY, dev, dt, {"m": max(m, 1), "n": max(n, 1), "k": max(k, 1)})
    kern = kernels["gemm"]
    g, loc = grid(m, n, params)
    return _Recipe(kern, g, loc, np.int32(m), np.int32(n), np.int32(k), kern.params[3], kern.params[4], (m, n),
                   m * n * dt.np.itemsize)


def run(a, b, c=None, alpha=1.0, beta=0.0):
    if getattr(getattr(a, "_dt", None), "name", None) in gemm_mma.DTYPES:  # 16-bit floats: tensor cores
        return gemm_mma.run(a, b, c, alpha, beta)
    a = checks.buffer("gemm", "a", a, ndim=2)
    b = checks.buffer("gemm", "b", b, ndim=2)
    checks.like("gemm", a, "b", b)
    dev, dt = a.device, a._dt or a._check()  # (closed since the check: raises)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise InvalidArgumentError(f"gemm: a is {a.shape} and b is {b.shape}; a's columns ({k}) must equal "
                                   f"b's rows ({k2})")
    if c is None:
        if beta != 0:
            raise InvalidArgumentError("gemm: beta != 0 needs a c to scale")
    else:
        c = checks.buffer("gemm", "c", c, ndim=2)
        checks.like("gemm", a, "c", c)
        if c.shape != (m, n):
            raise InvalidArgumentError(f"gemm: c has shape {c.shape}, expected ({m}, {n}) for a {a.shape} @ b {b.shape}")
    key = (dev, dt.name, m, n, k)
    (kern, g, loc, pm, pn, pk, palpha, pbeta, shape, nbytes), fast = recall(_RECIPES, key, dev,
                                                                           lambda: _recipe(dev, dt, m, n, k))
    al = convert_scalar(alpha, palpha, "gemm: alpha")
    be = convert_scalar(beta, pbeta, "gemm: beta")
    if c is None:
        c = Buffer._allocate(dev, shape, dt, nbytes)
    if nbytes:
        if fast:
            dev._launch(kern, g, loc, [pm, pn, pk, al, be, a._arg or a._launch_arg(), b._arg or b._launch_arg(),
                                       c._arg or c._launch_arg()])
        else:
            dev._launch(kern, g, loc, [pm, pn, pk, al, be, dev._buffer_arg(a), dev._buffer_arg(b), dev._buffer_arg(c)])
    return c


def reference(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, alpha=1.0, beta=0.0) -> np.ndarray:
    out = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if c is not None and beta != 0:
        out = out + beta * c.astype(np.float64)
    return out.astype(a.dtype)
