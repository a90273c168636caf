"""Typed signatures of isthmus.ops, written from the op specs by `python -m isthmus.ops.docs`
(edit the specs, not this file)."""
from typing import Any

from ..buffer import Buffer


def axpy(a: float, x: Buffer, y: Buffer) -> Buffer:
    """y = a*x + y, in place; returns y."""

def cross_entropy(
        logits: Buffer, targets: Buffer, ignore_index: float = ..., label_smoothing: float = ..., reduction: Any = ...,
        grad: bool = ..., z_loss: float = ..., *, grad_out: Any = ..., check_targets: bool = ...,
        out: Buffer | None = ...,
) -> Any:
    """Softmax cross-entropy of each row of ``logits`` (``(..., C)``: rows of vocabulary width)
    against ``targets`` (int32/int64 class indices, shaped as the rows) as
    ``torch.nn.functional.cross_entropy``: rows whose target is ``ignore_index`` count for nothing,
    ``label_smoothing`` as torch defines it, ``reduction`` "mean" (over the rows not ignored; NaN
    when every row is), "sum" or "none" (a loss per row, shaped as ``targets``); plus ``z_loss *
    lse**2`` per row (PaLM's and Liger's z-loss; lse the row's log-sum-exp). Float16 and bfloat16
    logits are computed in float32."""

def fused_linear_cross_entropy(
        hidden: Buffer, weight: Buffer, targets: Buffer, bias: Any = ..., ignore_index: float = ...,
        reduction: Any = ..., grad: bool = ..., label_smoothing: float = ..., z_loss: float = ..., *,
        max_chunk_bytes: Any = ..., check_targets: bool = ..., grad_hidden: Any = ..., grad_weight: Any = ...,
        grad_bias: Any = ..., out: Buffer | None = ...,
) -> Any:
    """The cross-entropy (:func:`cross_entropy`'s semantics) of the logits ``hidden @ weight.T (+ bias)``
    (hidden ``(tokens, H)``, weight ``(V, H)``, bias ``(V,)``, targets ``(tokens,)``), and with
    ``grad=True`` the gradients of hidden and weight (and bias), without the full ``(tokens, V)``
    logits ever existing: the tokens run in chunks whose logits take at most ``max_chunk_bytes``
    (default: the size of ``hidden``, at least 64 MiB); each chunk is one gemm, the loss and its
    gradient in place over the chunk's logits, then ``grad_hidden[chunk] = dlogits @ weight`` and
    ``grad_weight += dlogits.T @ hidden[chunk]``."""

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


__all__ = ['axpy', 'cross_entropy', 'fused_linear_cross_entropy', 'gemm', 'sum', 'max', 'scale', 'softmax', 'transpose']
