"""Typed signatures of isthmus.ops, written from the op specs by `python -m isthmus.ops.docs`
(edit the specs, not this file)."""
from typing import Any

from ..buffer import Buffer


def attention(
        q: Buffer, k: Buffer, v: Buffer, causal: bool = ..., scale: Any = ..., sliding_window: Any = ...,
        softcap: Any = ..., return_lse: bool = ..., cu_seqlens_q: Any = ..., cu_seqlens_k: Any = ...,
        out: Buffer | None = ..., lse_out: Any = ...,
) -> 'Buffer | tuple[Buffer, Buffer]':
    """Softmax attention ``softmax(scale * q k^T) v`` per head, without forming the scores."""

def axpy(a: float, x: Buffer, y: Buffer) -> Buffer:
    """y = a*x + y, in place; returns y."""

def gemm(
        a: Buffer, b: Buffer, c: Buffer | None = ..., alpha: float = ..., beta: float = ..., *, trans_a: bool = ...,
        trans_b: bool = ..., out_dtype: Any = ...,
) -> Buffer:
    """Row-major C = alpha*op(A)@op(B) + beta*C; allocates C when not given; returns C."""

def sum(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The sum of all elements, as a one-element Buffer (``out`` to reuse one) of NumPy's dtype for
    the sum: int64 for int32, uint64 for uint8 (integer sums run in 64 bits), x's dtype for floats
    (float16 and bfloat16 accumulate in float32 and round once)."""

def max(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The largest element, as a one-element Buffer of x's dtype (an empty x is an error)."""

def scale(alpha: float, x: Buffer, out: Buffer | None = ...) -> Buffer:
    """out = alpha * x, into a new Buffer or ``out`` (which may be x itself); returns it."""

def softmax(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""

def transpose(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x)."""


__all__ = ['attention', 'axpy', 'gemm', 'sum', 'max', 'scale', 'softmax', 'transpose']
