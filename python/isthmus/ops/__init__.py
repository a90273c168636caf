"""The kernel library as functions. Each runs on the device its buffers live on.

>>> y = isthmus.ops.axpy(2.0, x, y)         # y = 2x + y, in place
>>> s = isthmus.ops.sum(x)                   # one-element Buffer
>>> p = isthmus.ops.softmax(logits)          # row-wise, new Buffer
>>> c = isthmus.ops.gemm(a, b)               # new (M, N) Buffer

Each function is the ``run`` of its op's spec (``ops/specs/<op>.py``), taken from the registry.
"""
from __future__ import annotations

from .registry import OPS as _OPS

globals().update({_name: _spec.run for _name, _spec in _OPS.items()})
__all__ = list(_OPS)
