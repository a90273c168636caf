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

def decode_attention(
        q: Buffer, k_cache: Buffer, v_cache: Buffer, lengths: Buffer, scale: Any = ..., return_lse: bool = ...,
        out: Buffer | None = ..., lse_out: Any = ...,
) -> 'Buffer | tuple[Buffer, Buffer]':
    """Attention of the new tokens over a contiguous KV cache (flash decoding)."""

def paged_decode_attention(
        q: Buffer, k_pages: Buffer, v_pages: Buffer, page_table: Buffer, lengths: Buffer, scale: Any = ...,
        return_lse: bool = ..., out: Buffer | None = ..., lse_out: Any = ...,
) -> 'Buffer | tuple[Buffer, Buffer]':
    """Attention of the new tokens over a paged KV cache (flash decoding)."""

def kv_append(
        k_cache: Buffer, v_cache: Buffer, k_new: Buffer, v_new: Buffer, positions: Buffer,
) -> 'tuple[Buffer, Buffer]':
    """Write new keys and values into a contiguous cache, in place: ``k_cache[b, positions[b] + t] =
    k_new[b, t]`` (and v). k_new, v_new ``(batch, n_new, kv_heads, head_dim)`` or ``(batch,
    kv_heads, head_dim)``; positions int32 ``(batch,)``; keys past max_len are dropped. Returns
    ``(k_cache, v_cache)``."""

def paged_kv_append(
        k_pages: Buffer, v_pages: Buffer, k_new: Buffer, v_new: Buffer, page_table: Buffer, positions: Buffer,
) -> 'tuple[Buffer, Buffer]':
    """Write new keys and values into a paged cache, in place: sequence b's token t goes to key
    ``positions[b] + t``, in page ``page_table[b, (positions[b] + t) // page_size]``; keys past
    max_pages * page_size or on a page outside the pool are dropped. Returns ``(k_pages, v_pages)``."""

def gemm(
        a: Buffer, b: Buffer, c: Buffer | None = ..., alpha: float = ..., beta: float = ..., *, trans_a: bool = ...,
        trans_b: bool = ..., out_dtype: Any = ...,
) -> Buffer:
    """Row-major C = alpha*op(A)@op(B) + beta*C; allocates C when not given; returns C."""

def linear_attention(
        q: Buffer, k: Buffer, v: Buffer, causal: bool = ..., feature_map: Any = ..., chunk: Any = ..., state: Any = ...,
        return_state: bool = ..., out: Buffer | None = ...,
) -> 'Buffer | tuple[Buffer, Buffer]':
    """Linear attention ``o_i = phi(q_i) . sum_j phi(k_j) v_j^T / phi(q_i) . sum_j phi(k_j)`` (j <= i
    when ``causal``) on ``(batch, seq, heads, head_dim)`` q, k, v; ``feature_map``: "elu1" (elu(x) + 1),
    "relu" or "identity" (a zero denominator gives 0). ``chunk``: tokens per chunk of the causal scan
    (4 to 64, a power of two; None: the tuned one). ``state``: float32 ``(batch, heads, head_dim,
    head_dim + 1)`` (S, then z as the last column): the sums of earlier keys, continued from and
    updated in place (a recurrent decode step: a call per token, O(1) work each). ``return_state``:
    also return the state (a new buffer when none is given). Returns o (and the state)."""

def merge_attention_states(
        o_a: Buffer, lse_a: Buffer, o_b: Buffer, lse_b: Buffer, out: Buffer | None = ..., lse_out: Any = ...,
) -> 'tuple[Buffer, Buffer]':
    """The attention over the union of two disjoint key sets from each set's result: o_a, o_b
    ``(tokens, heads, head_dim)``, lse_a, lse_b float32 ``(tokens, heads)`` (natural log; -inf: the
    set is empty for that row). Returns ``(o, lse)``, new buffers or ``out``/``lse_out``."""

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


__all__ = ['attention', 'axpy', 'decode_attention', 'paged_decode_attention', 'kv_append', 'paged_kv_append', 'gemm', 'linear_attention', 'merge_attention_states', 'sum', 'max', 'scale', 'softmax', 'transpose']
