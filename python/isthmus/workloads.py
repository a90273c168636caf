"""Standard workloads of the kernel library: inputs, the isthmus call, the NumPy reference and
the bytes/flops each moves — shared by the demo, the benchmarks and the tuner."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import ops
from .ops.registry import REFERENCES


@dataclass
class Workload:
    op: str
    label: str
    host: tuple  # NumPy inputs
    make: Callable  # dev -> device args
    call: Callable  # *device args -> Buffer (the result)
    expect: Callable  # () -> NumPy reference result
    bytes: int  # fewest bytes moved through device memory
    flops: int
    numpy: Callable  # () -> the NumPy call a user would otherwise make

    def error(self, out: np.ndarray) -> float:
        """Relative error of a result. A sum is judged against the sum of magnitudes: with mixed
        signs the sum itself can be tiny, and rounding error scales with the magnitudes."""
        ref = self.expect()
        if self.op == "sum":
            scale = float(np.abs(self.host[0].astype(np.float64)).sum()) or 1.0
            return float(abs(float(out.ravel()[0]) - float(ref.ravel()[0]))) / scale
        return rel_error(out, ref)

    def metric(self, ms: float) -> tuple[float, str]:
        if self.flops:
            return self.flops / ms / 1e6, "GFLOP/s"
        return self.bytes / ms / 1e6, "GB/s"


def _rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def standard(sizes: dict, dtype=np.float32, seed: int = 0) -> list[Workload]:
    """Workloads at the given sizes: n (axpy, sum, max), rows/cols (softmax, transpose), mnk (gemm)."""
    rng = np.random.default_rng(seed)
    it = np.dtype(dtype).itemsize
    n, rows, cols, mnk = sizes["n"], sizes["rows"], sizes["cols"], sizes["mnk"]
    x, y = _rand(rng, n, dtype), _rand(rng, n, dtype)
    s = _rand(rng, (rows, cols), dtype)
    a, b = _rand(rng, (mnk, mnk), dtype), _rand(rng, (mnk, mnk), dtype)
    out = [
        Workload("axpy", f"axpy n={n}", (x, y), lambda d: (d.asarray(x), d.asarray(y)),
                 lambda dx, dy: ops.axpy(2.0, dx, dy), lambda: REFERENCES["axpy"](2.0, x, y), 3 * n * it, 0,
                 lambda: np.add(2.0 * x, y)),
        Workload("sum", f"sum n={n}", (x,), lambda d: (d.asarray(x),), ops.sum, lambda: REFERENCES["sum"](x),
                 n * it, 0, lambda: x.sum()),
        Workload("max", f"max n={n}", (x,), lambda d: (d.asarray(x),), ops.max, lambda: REFERENCES["max"](x),
                 n * it, 0, lambda: x.max()),
        Workload("softmax", f"softmax {rows}x{cols}", (s,), lambda d: (d.asarray(s),), ops.softmax,
                 lambda: REFERENCES["softmax"](s), 2 * rows * cols * it, 0,
                 lambda: (lambda e: e / e.sum(axis=1, keepdims=True))(np.exp(s - s.max(axis=1, keepdims=True)))),
        Workload("transpose", f"transpose {rows}x{cols}", (s,), lambda d: (d.asarray(s),), ops.transpose,
                 lambda: REFERENCES["transpose"](s), 2 * rows * cols * it, 0, lambda: np.ascontiguousarray(s.T)),
        Workload("gemm", f"gemm {mnk}^3", (a, b), lambda d: (d.asarray(a), d.asarray(b)), ops.gemm,
                 lambda: REFERENCES["gemm"](a, b), 3 * mnk * mnk * it, 2 * mnk ** 3, lambda: a @ b),
    ]
    return out


def tolerance(op: str, dtype, k: int = 1) -> float:
    """Relative-error bound (||out-ref|| / ||ref||) fitted to the dtype."""
    base = {np.dtype(np.float16): 3e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(np.dtype(dtype), 0.0)
    return base * (max(1.0, np.sqrt(k)) if op == "gemm" else 4.0)


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    ref64 = ref.astype(np.float64)
    denom = np.linalg.norm(ref64.ravel()) or 1.0
    return float(np.linalg.norm((out.astype(np.float64) - ref64).ravel()) / denom)


def sizes_for(dev, quick: bool = False) -> dict:
    if dev.kind == "gpu" and not quick:
        return {"n": 64 << 20, "rows": 8192, "cols": 8192, "mnk": 4096}
    if quick:
        return {"n": 1 << 20, "rows": 512, "cols": 1024, "mnk": 256}
    return {"n": 16 << 20, "rows": 2048, "cols": 2048, "mnk": 512}
