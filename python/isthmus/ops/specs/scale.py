"""scale: out = alpha * x, for any float dtype (16-bit ones in float arithmetic, one rounding)."""
from __future__ import annotations

import numpy as np

from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Tunable, sample


_STEP = 64  # elements a LAYOUT 1 work-item handles per step (four 16-wide vectors, scale.cl)


def grid(n: int, p: dict) -> tuple[tuple[int], tuple[int]]:
    wg = p["WG"]
    if p.get("LAYOUT", 0) == 1:  # a chunk per work-item: few work-groups
        return (max(1, min(p["GROUPS"], -(-n // (wg * _STEP)))) * wg,), (wg,)
    return (-(-n // wg) * wg,), (wg,)


def _steps(dev, dt, n: int) -> tuple:
    params, kernels = resolve(SPEC, dev, dt, {"n": n})
    return (kernels["scale"], *grid(n, params), np.int64(n), n * dt.np.itemsize)


def scale(alpha, x, out=None):
    """out = alpha * x, into a new Buffer or ``out`` (which may be x itself); returns it.

    >>> y = isthmus.ops.scale(0.5, x)
    """
    x = checks.buffer("scale", "x", x)
    dev, dt = x.device, x._dt or x._check()  # (closed since the check: raises)
    alpha = checks.scalar("scale", "alpha", alpha, dt.acc)
    k, g, loc, n, nbytes = plan(SPEC, (dev, dt.name, x.nbytes), lambda: _steps(dev, dt, x.size))
    y = checks.output("scale", out, x, x.shape, nbytes=nbytes)
    checks.in_place("scale", y, "x", x)  # out may be x itself, not a part of it
    if nbytes:
        try:
            dev.launch(k, g, loc, [n, alpha, x, y])
        except Exception:
            if y is not out:  # (alpha refused: the result is no one's)
                y.close()
            raise
    return y


def reference(alpha, x: np.ndarray) -> np.ndarray:
    acc = np.float64 if x.dtype == np.float64 else np.float32
    return (acc(alpha) * x.astype(acc)).astype(x.dtype)


SPEC = OpSpec(
    name="scale", source="scale.cl", entries=("scale",), dtypes=("float32", "float64", "float16", "bfloat16"),
    # LAYOUT 0: an element per work-item; 1 (CPUs: OpenCL C vectors, which the CUDA prelude lacks):
    # a contiguous chunk per work-item, in GROUPS work-groups at most
    tunables=(Tunable("WG", (16, 64, 128, 256, 512, 1024), 256), Tunable("LAYOUT", (0, 1), 0),
              Tunable("GROUPS", (1, 2, 4, 8, 16, 32, 64, 128), 16, when=("LAYOUT", (1,)))), problem=("n",),
    restrictions=("WG <= max_work_group_size", "LAYOUT == 0 or is_cpu", "WG >= 64 or LAYOUT == 1"),
    # PoCL 3.1, Intel Xeon, one core: LAYOUT 1 at 0.95x NumPy's multiply where LAYOUT 0 ran at 0.73x
    # (benchmarks/results/runs/2026-12-03-memory-bound-pocl-shipped/memory_bound_pocl-*)
    cpu_defaults=(("WG", 16), ("LAYOUT", 1), ("GROUPS", 16)),
    run=scale, reference=reference, inputs=lambda p, dt, rng: (sample(rng, p["n"], dt),),
    call=lambda x: scale(2.0, x), expect=lambda x: reference(2.0, x),
    moved=lambda p, size: 2 * p["n"] * size,
    into=lambda out, x: scale(2.0, x, out=out), numpy=lambda x: 2.0 * x, summary="out = alpha * x",
)
