"""Typed signatures of isthmus.ops, written from the op specs by `python -m isthmus.ops.docs`
(edit the specs, not this file)."""
from typing import Any

from ..buffer import Buffer


def axpy(a: float, x: Buffer, y: Buffer) -> Buffer:
    """y = a*x + y, in place; returns y."""

def gemm(
        a: Buffer, b: Buffer, c: Buffer | None = ..., alpha: float = ..., beta: float = ..., *, trans_a: bool = ...,
        trans_b: bool = ..., out_dtype: Any = ...,
) -> Buffer:
    """Row-major C = alpha*op(A)@op(B) + beta*C; allocates C when not given; returns C."""

def layernorm(
        x: Buffer, weight: Buffer | None = ..., bias: Buffer | None = ..., eps: float = ...,
        residual: Buffer | None = ..., out: Buffer | None = ...,
) -> Buffer:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension of x (any leading
    dimensions; weight and bias have x.shape[-1] elements, each optional: the plain form without
    them), the biased variance as torch's layer_norm, in float32 arithmetic for 16-bit dtypes,
    rounded once; into a new Buffer or ``out`` (which may be x itself); returns it."""

def sum(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The sum of all elements, as a one-element Buffer (``out`` to reuse one) of NumPy's dtype for
    the sum: int64 for int32, uint64 for uint8 (integer sums run in 64 bits), x's dtype for floats
    (float16 and bfloat16 accumulate in float32 and round once)."""

def max(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The largest element, as a one-element Buffer of x's dtype (an empty x is an error)."""

def rmsnorm(
        x: Buffer, weight: Buffer, eps: float = ..., residual: Buffer | None = ..., offset: float = ...,
        out: Buffer | None = ...,
) -> Buffer:
    """x / sqrt(mean(x^2) + eps) * (offset + weight) over the last dimension of x (any leading
    dimensions; weight has x.shape[-1] elements), in float32 arithmetic for 16-bit dtypes, rounded
    once; into a new Buffer or ``out`` (which may be x itself); returns it."""

def scale(alpha: float, x: Buffer, out: Buffer | None = ...) -> Buffer:
    """out = alpha * x, into a new Buffer or ``out`` (which may be x itself); returns it."""

def softmax(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""

def transpose(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x)."""


__all__ = ['axpy', 'gemm', 'layernorm', 'sum', 'max', 'rmsnorm', 'scale', 'softmax', 'transpose']
