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

def layernorm(
        x: Buffer, weight: Buffer | None = ..., bias: Buffer | None = ..., eps: float = ...,
        residual: Buffer | None = ..., out: Buffer | None = ...,
) -> Buffer:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension of x (any leading
    dimensions; weight and bias have x.shape[-1] elements, each optional: the plain form without
    them), the biased variance as torch's layer_norm, in float32 arithmetic for 16-bit dtypes,
    rounded once; into a new Buffer or ``out`` (which may be x itself); returns it."""

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

def rmsnorm(
        x: Buffer, weight: Buffer, eps: float = ..., residual: Buffer | None = ..., offset: float = ...,
        out: Buffer | None = ...,
) -> Buffer:
    """x / sqrt(mean(x^2) + eps) * (offset + weight) over the last dimension of x (any leading
    dimensions; weight has x.shape[-1] elements), in float32 arithmetic for 16-bit dtypes, rounded
    once; into a new Buffer or ``out`` (which may be x itself); returns it."""

def rope(
        x: Buffer, positions: Buffer, theta: float = ..., interleaved: bool = ..., rope_scaling: Any = ...,
        rotary_dim: Any = ..., k: Any = ...,
) -> Buffer:
    """Rotary position embedding of ``x`` in place (and of ``k`` in the same launch: the q and k of
    one attention layer, each with its own number of heads); returns ``x``."""

def argmax(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The index of the largest value of each row (the last dimension), as an int32 Buffer of
    x's leading shape (``out`` to reuse one). As torch: NaN is the largest value, ties go to the
    lowest index."""

def top_k(x: Buffer, k: int, out: tuple[Buffer, Buffer] | None = ...) -> tuple[Buffer, Buffer]:
    """The ``k`` largest values of each row (the last dimension) and their indices, as
    ``(values, indices)``: Buffers of shape ``x.shape[:-1] + (k,)``, values in x's dtype sorted
    largest first, indices int32 (``out=(values, indices)`` to reuse two). As torch.topk: NaN is
    the largest value, ties go to the lowest index. 1 <= k <= min(row width, 1024)."""

def sample(
        logits: Buffer, temperature: float = ..., top_k: int = ..., top_p: float = ..., seed: int = ...,
        offsets: int | Buffer = ..., out: Buffer | None = ...,
) -> Buffer:
    """One token per row of ``logits`` (the last dimension), drawn on the device, as an int32
    Buffer of the leading shape (``out`` to reuse one)."""

def scale(alpha: float, x: Buffer, out: Buffer | None = ...) -> Buffer:
    """out = alpha * x, into a new Buffer or ``out`` (which may be x itself); returns it."""

def softmax(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """Row-wise softmax of a 2-D buffer, into a new Buffer or ``out`` (which may be x itself).
    As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0."""

def transpose(x: Buffer, out: Buffer | None = ...) -> Buffer:
    """The transpose of a 2-D buffer, into a new Buffer or ``out`` (of shape (cols, rows), not x)."""


__all__ = ['attention', 'axpy', 'cross_entropy', 'fused_linear_cross_entropy', 'decode_attention', 'paged_decode_attention', 'kv_append', 'paged_kv_append', 'embedding', 'gemm', 'silu_mul', 'gelu_mul', 'layernorm', 'linear_attention', 'merge_attention_states', 'sum', 'max', 'rmsnorm', 'rope', 'argmax', 'top_k', 'sample', 'scale', 'softmax', 'transpose']
