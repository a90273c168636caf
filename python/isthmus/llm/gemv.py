"""Gemv: ``y = x @ W.T`` for bfloat16 with a few rows (a decode step's projections), through
opencl/llm_gemv.cl: an experiment next to ``isthmus.ops.gemm`` (whose 16-bit path is tensor-core
tiles of 64 rows), switched on by :data:`ENABLED` where measurements favour it."""
from __future__ import annotations

import numpy as np

from .. import knobs, ops
from ..buffer import Buffer
from ..dtypes import lookup
from ..launch import LaunchConfig

ENABLED = False  # (module-level so that a measurement can compare; see tests/llm/gpu_check_llm.py)
MAX_ROWS = 8
WARPS, RN = 4, 2


class Gemv:
    """The model's x @ W.T: the bf16 GEMV where it applies, else ops.gemm."""

    def __init__(self, dev):
        self.dev = dev
        self._kernels: dict = {}
        self._bytes: dict = {}  # id(buffer) -> (buffer, its uint8 view)
        self._u8 = lookup(np.uint8)

    def applies(self, x: Buffer, w: Buffer) -> bool:
        return (ENABLED and x._dt.name == "bfloat16" and w._dt.name == "bfloat16" and len(x.shape) == 2
                and x.shape[0] <= MAX_ROWS and x.shape[1] % 8 == 0)

    def __call__(self, x: Buffer, w: Buffer, out: Buffer, out_f32: bool = False) -> Buffer:
        if not self.applies(x, w):
            return ops.gemm(x, w, out, trans_b=True, out_dtype="float32" if out_f32 else None)
        m, k = x.shape
        n = w.shape[0]
        key = (m, out_f32)
        kern = self._kernels.get(key)
        if kern is None:
            src = (knobs.kernel_dir() / "llm_gemv.cl").read_text()
            kern = self._kernels[key] = self.dev.compile(src, "llm_gemv_bf16", {"RM": m, "RN": RN, "WARPS": WARPS,
                                                                                "OUT_F32": int(out_f32)})
        groups = -(-n // (WARPS * RN))
        kern(np.int32(m), np.int32(n), np.int32(k), self._bytes_of(x), self._weight(w), self._bytes_of(out),
             config=LaunchConfig((groups * 32 * WARPS,), (32 * WARPS,)))
        return out

    def _bytes_of(self, b: Buffer) -> Buffer:
        """The same memory as bytes (a launch, or a captured graph, holds it as long as it needs it)."""
        return Buffer(b.device, b._handle(), (b.nbytes,), self._u8, b.nbytes, owner=b)

    def _weight(self, w: Buffer) -> Buffer:
        found = self._bytes.get(id(w))  # (the weights': made once, closed with the model)
        if found is None or found[0] is not w:
            found = self._bytes[id(w)] = (w, self._bytes_of(w))
        return found[1]

    def close(self) -> None:
        for _, v in self._bytes.values():
            v.close()
        self._bytes = {}
