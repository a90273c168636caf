"""Typed signatures of isthmus.ops, written from the op specs by `python -m isthmus.ops.docs`
(edit the specs, not this file)."""
from typing import Any

from ..buffer import Buffer


def axpy(a: float, x: Buffer, y: Buffer) -> Buffer:
    """y = a*x + y, in place; returns y."""

def embedding(ids: Buffer, table: Buffer, out: Buffer | None = ..., check: bool = ...) -> Buffer:
    """The rows of ``table`` (vocab, hidden) at ``ids`` (int32/int64, any shape), as a new Buffer
    of shape ``ids.shape + (hidden,)`` or into ``out``. ``check``: read the kernel's out-of-range
    flag after the launch (waits for the device) and raise InvalidArgumentError for an id outside
    0 .. vocab-1 (whose rows were read clamped, never out of bounds); ``check=False`` inside
    ``dev.capture()`` and where no wait is wanted."""

def gemm(
        a: Buffer, b: Buffer, c: Buffer | None = ..., alpha: float = ..., beta: float = ..., *, trans_a: bool = ...,
        trans_b: bool = ..., out_dtype: Any = ...,
) -> Buffer:
    """Row-major C = alpha*op(A)@op(B) + beta*C; allocates C when not given; returns C."""

def silu_mul(gate: Buffer, up: Any = ..., out: Buffer | None = ...) -> Buffer:
    """SwiGLU: ``silu(gate) * up`` (silu(g) = g / (1 + exp(-g))), into a new Buffer or ``out``.
    ``up=None``: ``gate`` is one gate_up buffer, its last dimension the gate's half then up's."""

def gelu_mul(gate: Buffer, up: Any = ..., approximate: Any = ..., out: Buffer | None = ...) -> Buffer:
    """GeGLU: ``gelu(gate) * up``, gelu's ``approximate`` form as torch's: ``"tanh"``
    (0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))) or ``"none"`` (0.5 g (1 + erf(g / sqrt 2))).
    ``up=None``: ``gate`` is one gate_up buffer (last dimension: gate's half, then up's)."""

def sum(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The sum of all elements, as a one-element Buffer (``out`` to reuse one) of NumPy's dtype for
    the sum: int64 for int32, uint64 for uint8 (integer sums run in 64 bits), x's dtype for floats
    (float16 and bfloat16 accumulate in float32 and round once)."""

def max(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The largest element, as a one-element Buffer of x's dtype (an empty x is an error)."""

def rope(
        x: Buffer, positions: Buffer, theta: float = ..., interleaved: bool = ..., rope_scaling: Any = ...,
        rotary_dim: Any = ..., k: Any = ...,
) -> Buffer:
    """Rotary position embedding of ``x`` in place (and of ``k`` in the same launch: the q and k of
    one attention layer, each with its own number of heads); returns ``x``."""

def scale(alpha: float, x: Buffer, out: Buffer | None = ...) -> Buffer:
    """out = alpha * x, into a new Buffer or ``out`` (which may be x itself); returns it."""

def softmax(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""

def transpose(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x)."""


__all__ = ['axpy', 'embedding', 'gemm', 'silu_mul', 'gelu_mul', 'sum', 'max', 'rope', 'scale', 'softmax', 'transpose']
