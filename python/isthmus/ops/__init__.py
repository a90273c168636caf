"""The kernel library as functions. Each runs on the device its buffers live on.

>>> y = isthmus.ops.axpy(2.0, x, y)         # y = 2x + y, in place
>>> s = isthmus.ops.sum(x)                   # one-element Buffer
>>> p = isthmus.ops.softmax(logits)          # row-wise, new Buffer
>>> c = isthmus.ops.gemm(a, b)               # new (M, N) Buffer
"""
from __future__ import annotations

from ..buffer import Buffer
from .specs import axpy as _axpy
from .specs import gemm as _gemm
from .specs import reduce as _reduce
from .specs import softmax as _softmax
from .specs import transpose as _transpose


def axpy(a, x: Buffer, y: Buffer) -> Buffer:
    """y = a*x + y, in place; returns y."""
    return _axpy.run(a, x, y)


def sum(x: Buffer, out: Buffer | None = None) -> Buffer:  # noqa: A001 - mirrors numpy.sum
    """The sum of all elements, as a one-element Buffer of x's dtype (``out`` to reuse one)."""
    return _reduce._run(_reduce.SUM, x, out)


def max(x: Buffer, out: Buffer | None = None) -> Buffer:  # noqa: A001 - mirrors numpy.max
    """The largest element, as a one-element Buffer (an empty x is an error)."""
    return _reduce._run(_reduce.MAX, x, out)


def softmax(x: Buffer, out: Buffer | None = None) -> Buffer:
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""
    return _softmax.run(x, out)


def transpose(x: Buffer, out: Buffer | None = None) -> Buffer:
    """The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x)."""
    return _transpose.run(x, out)


def gemm(a: Buffer, b: Buffer, c: Buffer | None = None, alpha: float = 1.0, beta: float = 0.0, *,
         trans_a: bool = False, trans_b: bool = False, out_dtype=None) -> Buffer:
    """Row-major C = alpha*op(A)@op(B) + beta*C; allocates C when not given; returns C.

    op(A) = A.T with ``trans_a`` (A stored K x M), op(B) = B.T with ``trans_b`` (B stored N x K):
    ``gemm(x, w, trans_b=True)`` is ``x @ w.T`` for row-major weights, with no transpose kernel.
    3-D operands are batched over their leading dimension in one launch (a 2-D operand next to a
    3-D one is shared by every entry); C is then (batch, M, N).

    >>> y = isthmus.ops.gemm(x, w, trans_b=True)          # (16, 4096) @ (11008, 4096).T
    >>> c = isthmus.ops.gemm(a3, b3)                       # (64, M, K) @ (64, K, N)
    """
    return _gemm.run(a, b, c, alpha, beta, trans_a, trans_b, out_dtype)
