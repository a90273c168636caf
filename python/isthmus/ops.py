"""The kernel library as functions. Each runs on the device its buffers live on.

>>> y = isthmus.ops.axpy(2.0, x, y)         # y = 2x + y, in place
>>> s = isthmus.ops.sum(x)                   # one-element Buffer
>>> p = isthmus.ops.softmax(logits)          # row-wise, new Buffer
>>> c = isthmus.ops.gemm(a, b)               # new (M, N) Buffer
"""
from __future__ import annotations

from .buffer import Buffer
from .library import axpy as _axpy
from .library import gemm as _gemm
from .library import reduce as _reduce
from .library import softmax as _softmax
from .library import transpose as _transpose


def axpy(a, x: Buffer, y: Buffer) -> Buffer:
    """y = a*x + y, in place; returns y."""
    return _axpy.run(a, x, y)


def sum(x: Buffer) -> Buffer:  # noqa: A001 - mirrors numpy.sum
    """The sum of all elements, as a one-element Buffer of x's dtype."""
    return _reduce.run_sum(x)


def max(x: Buffer) -> Buffer:  # noqa: A001 - mirrors numpy.max
    """The largest element, as a one-element Buffer (an empty x is an error)."""
    return _reduce.run_max(x)


def softmax(x: Buffer) -> Buffer:
    """Row-wise softmax of a 2-D buffer, into a new Buffer."""
    return _softmax.run(x)


def transpose(x: Buffer) -> Buffer:
    """The transpose of a 2-D buffer, as a new Buffer."""
    return _transpose.run(x)


def gemm(a: Buffer, b: Buffer, c: Buffer | None = None, alpha: float = 1.0, beta: float = 0.0) -> Buffer:
    """Row-major C = alpha*A@B + beta*C; allocates C when not given; returns C."""
    return _gemm.run(a, b, c, alpha, beta)
