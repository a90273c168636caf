"""attention (flash prefill): dense and variable-length batches, causal masks aligned to the end,
grouped/multi-query heads, sliding windows, softcap, the log-sum-exp, every tunable, every float
dtype, into poisoned outputs, against a float64 NumPy reference written here; a graph replayed with
other sequence lengths; the typed error for each bad argument."""
import math

import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.errors import InvalidArgumentError, UnsupportedDtypeError
from isthmus.ops.resolve import forced
from isthmus.ops.specs.attention import SPEC

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": BF16}
# max abs error allowed against float64 (inputs are drawn in the dtype; outputs are averages of v)
ATOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}


def attend64(q, k, v, causal=True, scale=None, window=None, softcap=None):
    """One sequence, float64: q (lq, h, d), k and v (lk, kvh, d) -> (o (lq, h, d), lse (h, lq))."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    lq, h, d = q.shape
    lk, kvh = k.shape[:2]
    k, v = np.repeat(k, h // kvh, axis=1), np.repeat(v, h // kvh, axis=1)
    s = np.einsum("ihd,jhd->hij", q, k) * (1 / math.sqrt(d) if scale is None else scale)
    if softcap:
        s = softcap * np.tanh(s / softcap)
    i = np.arange(lq)[:, None] + lk - lq
    j = np.arange(lk)[None, :]
    seen = np.ones((lq, lk), bool)
    if causal:
        seen &= j <= i
    if window:
        seen &= j > i - window
        if not causal:
            seen &= j < i + window
    o, lse = np.zeros((lq, h, d)), np.full((h, lq), -np.inf)
    for hh in range(h):
        for r in range(lq):
            sr = s[hh, r][seen[r]]
            if sr.size:
                m = sr.max()
                e = np.exp(sr - m)
                o[r, hh] = e @ v[seen[r], hh] / e.sum()
                lse[hh, r] = m + np.log(e.sum())
    return o, lse


def _draw(rng, shape, dtype):
    return rng.standard_normal(shape).astype(NP[dtype])


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _close(got, want, dtype):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", [
    # (batch, seq_q, seq_k, heads, kv_heads, head_dim, keywords)
    (2, 37, 37, 6, 2, 24, {}),                                   # GQA, square causal
    (1, 19, 61, 4, 1, 24, {}),                                   # MQA, a chunk over a longer cache
    (2, 29, 11, 3, 3, 24, {}),                                   # more queries than keys: early rows see nothing
    (1, 33, 47, 4, 2, 24, {"causal": False}),
    (2, 41, 41, 2, 1, 24, {"sliding_window": 5, "softcap": 2.5, "scale": 0.3}),
    (1, 23, 40, 2, 2, 24, {"causal": False, "sliding_window": 9}),
])
def test_dense_attention_matches_float64(dev, rng, dtype, case):
    _need(dev, dtype)
    b, sq, sk, h, kvh, d, kw = case
    q, k, v = _draw(rng, (b, sq, h, d), dtype), _draw(rng, (b, sk, kvh, d), dtype), _draw(rng, (b, sk, kvh, d), dtype)
    out = dev.asarray(np.full(q.shape, np.nan, q.dtype))
    lse_out = dev.asarray(np.full((b, h, sq), np.nan, np.float32))
    got, lse = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), return_lse=True, out=out,
                                     lse_out=lse_out, **kw)
    assert got is out and lse is lse_out
    window = kw.get("sliding_window")
    ref = [attend64(q[i], k[i], v[i], kw.get("causal", True), kw.get("scale"), window, kw.get("softcap"))
           for i in range(b)]
    _close(got.to_numpy(), np.stack([r[0] for r in ref]), dtype)
    want_lse = np.stack([r[1] for r in ref])
    got_lse = lse.to_numpy().astype(np.float64)
    assert (np.isinf(got_lse) == np.isinf(want_lse)).all()
    finite = np.isfinite(want_lse)
    np.testing.assert_allclose(got_lse[finite], want_lse[finite], rtol=0, atol=ATOL[dtype])


@pytest.mark.parametrize("d", [64, 96, 128, 256])
def test_the_usual_head_dims(dev, rng, d):
    _need(dev, "float16")
    q, k, v = _draw(rng, (1, 9, 2, d), "float16"), _draw(rng, (1, 13, 1, d), "float16"), _draw(rng, (1, 13, 1, d), "float16")
    got = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v)).to_numpy()
    _close(got, attend64(q[0], k[0], v[0])[0][None], "float16")


@pytest.mark.parametrize("params", [{"BQ": 8, "BKT": 4}, {"BQ": 32, "BKT": 64}, {"BQ": 128, "BKT": 8},
                                    {"BQ": 64, "BKT": 16}, {"BQ": 16, "BKT": 32}])
def test_every_tile_config_is_right(dev, rng, params):
    problem = {"batch": 1, "seq_q": 45, "seq_k": 70, "heads": 2, "kv_heads": 1, "head_dim": 8}
    if not SPEC.is_valid(params, dev, problem, lookup("float32")):
        pytest.skip(f"{params} does not fit {dev.id}")
    q, k, v = _draw(rng, (1, 45, 2, 8), "float32"), _draw(rng, (1, 70, 1, 8), "float32"), _draw(rng, (1, 70, 1, 8), "float32")
    with forced(SPEC, params):
        got = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), sliding_window=30).to_numpy()
    _close(got, attend64(q[0], k[0], v[0], window=30)[0][None], "float32")


def _varlen(rng, lens_q, lens_k, h, kvh, d, dtype):
    cu_q, cu_k = np.concatenate([[0], np.cumsum(lens_q)]), np.concatenate([[0], np.cumsum(lens_k)])
    q, k, v = _draw(rng, (cu_q[-1], h, d), dtype), _draw(rng, (cu_k[-1], kvh, d), dtype), _draw(rng, (cu_k[-1], kvh, d), dtype)
    return q, k, v, cu_q.astype(np.int32), cu_k.astype(np.int32)


def _varlen_ref(q, k, v, cu_q, cu_k, **kw):
    o, lse = np.zeros(q.shape), np.full((q.shape[1], q.shape[0]), -np.inf)
    for b in range(len(cu_q) - 1):
        sl_q, sl_k = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        o[sl_q], lse[:, sl_q] = attend64(q[sl_q], k[sl_k], v[sl_k], **kw)
    return o, lse


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_variable_lengths_with_lse(dev, rng, dtype):
    _need(dev, dtype)
    # an empty sequence, one of a single token, one past a tile, one with fewer keys than queries
    q, k, v, cu_q, cu_k = _varlen(rng, [5, 0, 1, 23, 9], [5, 3, 7, 30, 4], 4, 2, 24, dtype)
    o, lse = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), return_lse=True,
                                   cu_seqlens_q=dev.asarray(cu_q), cu_seqlens_k=dev.asarray(cu_k))
    want, want_lse = _varlen_ref(q, k, v, cu_q, cu_k)
    _close(o.to_numpy(), want, dtype)
    got_lse = lse.to_numpy().astype(np.float64)
    assert lse.shape == (4, q.shape[0]) and (np.isinf(got_lse) == np.isinf(want_lse)).all()
    np.testing.assert_allclose(got_lse[np.isfinite(want_lse)], want_lse[np.isfinite(want_lse)], atol=ATOL[dtype])


def test_a_graph_replays_with_other_lengths(dev, rng):
    """The grid covers any lengths of the same totals: new offsets between replays, no re-capture."""
    q, k, v, cu_q, cu_k = _varlen(rng, [7, 12, 3], [9, 12, 20], 2, 1, 8, "float32")
    bufs = [dev.asarray(t) for t in (q, k, v)]
    cq, ck = dev.asarray(cu_q), dev.asarray(cu_k)
    with dev.capture() as graph:
        o = isthmus.ops.attention(*bufs, cu_seqlens_q=cq, cu_seqlens_k=ck)
    for lens_q, lens_k in (([7, 12, 3], [9, 12]), ([1, 1, 20], [1, 40]), ([22, 0, 0], [0, 0]), ([2, 18, 2], [30, 3])):
        new_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
        new_k = np.concatenate([[0], np.cumsum([lens_k[0], lens_k[1], 41 - sum(lens_k[:2])])]).astype(np.int32)
        cq.copy_from(new_q)
        ck.copy_from(new_k)
        graph.launch()
        _close(o.to_numpy(), _varlen_ref(q, k, v, new_q, new_k)[0], "float32")
    graph.close()


def test_bad_arguments_are_typed_errors(dev, rng):
    f = lambda *s: dev.asarray(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    q, k, v = f(1, 4, 6, 8), f(1, 5, 4, 8), f(1, 5, 4, 8)
    with pytest.raises(InvalidArgumentError, match="kv heads must divide"):
        isthmus.ops.attention(q, k, v)
    with pytest.raises(InvalidArgumentError, match="head_dim 300 is not supported"):
        isthmus.ops.attention(f(1, 2, 2, 300), f(1, 2, 2, 300), f(1, 2, 2, 300))
    k, v = f(1, 5, 3, 8), f(1, 5, 3, 8)
    with pytest.raises(InvalidArgumentError, match="k has shape .* and v"):
        isthmus.ops.attention(q, k, f(1, 6, 3, 8))
    with pytest.raises(InvalidArgumentError, match="head_dim 8 and k 4"):
        isthmus.ops.attention(q, f(1, 5, 3, 4), f(1, 5, 3, 4))
    with pytest.raises(InvalidArgumentError, match="batch 1 and k 2"):
        isthmus.ops.attention(q, f(2, 5, 3, 8), f(2, 5, 3, 8))
    with pytest.raises(InvalidArgumentError, match="must be 4-D"):
        isthmus.ops.attention(f(4, 6, 8), k, v)
    with pytest.raises(InvalidArgumentError, match="v has dtype int32"):
        isthmus.ops.attention(q, k, dev.asarray(np.zeros((1, 5, 3, 8), np.int32)))
    i = dev.asarray(np.zeros((1, 5, 3, 8), np.int32))
    with pytest.raises(UnsupportedDtypeError, match="attention does not support int32"):
        isthmus.ops.attention(i, i, i)
    with pytest.raises(InvalidArgumentError, match="sliding_window = 0"):
        isthmus.ops.attention(q, k, v, sliding_window=0)
    with pytest.raises(InvalidArgumentError, match="softcap = -1"):
        isthmus.ops.attention(q, k, v, softcap=-1.0)
    with pytest.raises(InvalidArgumentError, match="causal must be True or False"):
        isthmus.ops.attention(q, k, v, causal="yes")
    with pytest.raises(InvalidArgumentError, match="give both cu_seqlens_q and cu_seqlens_k"):
        isthmus.ops.attention(q, k, v, cu_seqlens_q=dev.asarray(np.zeros(2, np.int32)))
    cu = dev.asarray(np.array([0, 4], np.int32))
    with pytest.raises(InvalidArgumentError, match="cu_seqlens_k has 3 elements; it must have 2"):
        isthmus.ops.attention(f(4, 6, 8), f(5, 3, 8), f(5, 3, 8), cu_seqlens_q=cu,
                              cu_seqlens_k=dev.asarray(np.array([0, 4, 5], np.int32)))
    with pytest.raises(InvalidArgumentError, match="cu_seqlens_q must be int32"):
        isthmus.ops.attention(f(4, 6, 8), f(5, 3, 8), f(5, 3, 8), cu_seqlens_q=f(2), cu_seqlens_k=cu)
    with pytest.raises(InvalidArgumentError, match="out shares memory with q"):
        isthmus.ops.attention(q, k, v, out=q)
    with pytest.raises(InvalidArgumentError, match="lse_out must be float32 of shape"):
        isthmus.ops.attention(q, k, v, return_lse=True, lse_out=f(1, 6, 5))
