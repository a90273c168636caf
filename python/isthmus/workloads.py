"""Standard workloads of the kernel library: inputs, the isthmus call, the NumPy reference and
the bytes/flops each moves — shared by the demo, the benchmarks and the tuner."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .ops.registry import FAMILIES


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
        return (self.flops / ms / 1e6, "GFLOP/s") if self.flops else (self.bytes / ms / 1e6, "GB/s")


def problem(spec, sizes: dict) -> dict:
    """The spec's problem at the standard sizes: n (1-D ops), rows/cols (2-D ops), mnk (gemm)."""
    if spec.problem == ("m", "n", "k"):
        return dict.fromkeys("mnk", sizes["mnk"])
    return {p: sizes[p] for p in spec.problem}


def _label(name: str, p: dict) -> str:
    if len(p) == 1:
        return f"{name} {next(iter(p))}={next(iter(p.values()))}"
    values = set(p.values())
    return f"{name} {values.pop()}^{len(p)}" if len(values) == 1 and len(p) > 2 else f"{name} " + "x".join(
        str(v) for v in p.values())


def standard(sizes: dict, dtype=np.float32, seed: int = 0) -> list[Workload]:
    """A workload of every library op (its spec's sample inputs, call, reference) at the given
    sizes: n (1-D ops), rows/cols (2-D ops), mnk (gemm)."""
    rng = np.random.default_rng(seed)
    it = np.dtype(dtype).itemsize
    out = []
    for spec in FAMILIES.values():
        p = problem(spec, sizes)
        host = tuple(spec.inputs(p, dtype, rng))
        out.append(Workload(
            spec.name, _label(spec.name, p), host, lambda d, host=host: tuple(d.asarray(h) for h in host),
            spec.sample_call, lambda spec=spec, host=host: spec.sample_expect(*host), spec.moved(p, it),
            spec.flops(p) if spec.flops else 0, lambda spec=spec, host=host: spec.numpy(*host)))
    return out


def tolerance(op: str, dtype, k: int = 1) -> float:
    """Relative-error bound (||out-ref|| / ||ref||) fitted to the dtype: the spec's tolerance in
    units of the dtype's, growing with the length k of a contraction's sums."""
    spec = FAMILIES.get(op)
    base = {np.dtype(np.float16): 3e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(np.dtype(dtype), 0.0)
    scale = 4.0 if spec is None else spec.tolerance
    return base * scale * (max(1.0, np.sqrt(k)) if spec is not None and spec.flops else 1.0)


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
