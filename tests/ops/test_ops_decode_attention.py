"""decode_attention, paged_decode_attention (flash decoding), kv_append, paged_kv_append and
merge_attention_states: float64 NumPy references written here, odd sizes, every float dtype, every
split count and tile, poisoned outputs, a graph replayed with new lengths and page tables, cascade
decoding (a shared prefix merged with each sequence's suffix) exact to the unshared result, and the
typed error for each bad argument."""
import math

import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.errors import InvalidArgumentError
from isthmus.ops.resolve import forced
from isthmus.ops.specs import decode_attention as D

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": np.dtype(ml_dtypes.bfloat16)}
ATOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}
PAGE = 16


def decode64(q, k, v, lengths, scale=None):
    """q (b, n, h, d); k, v (b, L, kvh, d) contiguous; -> o (b, n, h, d), lse (b, n, h), float64.
    New token t of sequence b sees keys 0 .. lengths[b] - n + t."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    b, n, h, d = q.shape
    g = h // k.shape[2]
    o, lse = np.zeros(q.shape), np.full((b, n, h), -np.inf)
    for bb in range(b):
        for t in range(n):
            last = min(int(lengths[bb]), k.shape[1]) - n + t
            for hh in range(h):
                if last < 0:
                    continue
                s = k[bb, :last + 1, hh // g] @ q[bb, t, hh] * (1 / math.sqrt(d) if scale is None else scale)
                m = s.max()
                e = np.exp(s - m)
                o[bb, t, hh] = e @ v[bb, :last + 1, hh // g] / e.sum()
                lse[bb, t, hh] = m + np.log(e.sum())
    return o, lse


def _draw(rng, shape, dtype):
    return rng.standard_normal(shape).astype(NP[dtype])


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _close(got, want, dtype):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL[dtype])


def _lse_close(got, want, dtype):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape and (np.isinf(got) == np.isinf(want)).all()
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=0, atol=ATOL[dtype])


def _paged(rng, k, v, extra_pages=3):
    """The contiguous cache k, v (b, L, kvh, d) as shuffled pages, with its page table."""
    b, L = k.shape[:2]
    mp = -(-L // PAGE)
    pad = ((0, 0), (0, mp * PAGE - L), (0, 0), (0, 0))
    kp, vp = np.pad(k, pad).reshape(b * mp, PAGE, *k.shape[2:]), np.pad(v, pad).reshape(b * mp, PAGE, *k.shape[2:])
    perm = rng.permutation(b * mp + extra_pages)  # page i of the pool holds logical page inv[i]
    pool_k = _draw(rng, (b * mp + extra_pages, PAGE, *k.shape[2:]), "float32").astype(k.dtype)
    pool_v = pool_k.copy()
    pool_k[perm[:b * mp]], pool_v[perm[:b * mp]] = kp, vp
    return pool_k, pool_v, perm[:b * mp].reshape(b, mp).astype(np.int32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("b,n,L,h,kvh,d", [(3, 1, 77, 6, 2, 24), (2, 3, 45, 4, 1, 24), (1, 1, 1, 1, 1, 24)])
def test_decode_and_paged_decode_match_float64(dev, rng, dtype, b, n, L, h, kvh, d):
    _need(dev, dtype)
    q, k, v = _draw(rng, (b, n, h, d), dtype), _draw(rng, (b, L, kvh, d), dtype), _draw(rng, (b, L, kvh, d), dtype)
    lengths = rng.integers(0, L + 1, size=b).astype(np.int32)
    lengths[0] = L  # a full cache; the others any length, fewer than n included (rows that see nothing)
    want, want_lse = decode64(q, k, v, lengths)
    qq = q[:, 0] if n == 1 else q  # one new token: q is (batch, heads, head_dim)
    shape = qq.shape
    out = dev.asarray(np.full(shape, np.nan, q.dtype))
    o, lse = isthmus.ops.decode_attention(dev.asarray(qq), dev.asarray(k), dev.asarray(v), dev.asarray(lengths),
                                          return_lse=True, out=out)
    assert o is out and lse.shape == shape[:-1]
    _close(o.to_numpy(), want.reshape(shape), dtype)
    _lse_close(lse.to_numpy(), want_lse.reshape(shape[:-1]), dtype)
    kp, vp, table = _paged(rng, k, v)
    o, lse = isthmus.ops.paged_decode_attention(dev.asarray(qq), dev.asarray(kp), dev.asarray(vp), dev.asarray(table),
                                                dev.asarray(lengths), return_lse=True)
    _close(o.to_numpy(), want.reshape(shape), dtype)
    _lse_close(lse.to_numpy(), want_lse.reshape(shape[:-1]), dtype)


@pytest.mark.parametrize("params", [{"WG": 16, "RB": 1, "SPLITS": 64}, {"WG": 32, "RB": 16, "SPLITS": 4},
                                    {"WG": 64, "RB": 2, "SPLITS": 1}, {"WG": 128, "RB": 4, "SPLITS": 8},
                                    {"WG": 256, "RB": 8, "SPLITS": 32}, {"WG": 16, "RB": 16, "SPLITS": 2},
                                    {"WG": 32, "RB": 8, "SPLITS": 16}])
def test_every_split_and_tile_is_right(dev, rng, params):
    problem = {"batch": 2, "new": 2, "keys": 300, "heads": 6, "kv_heads": 2, "head_dim": 8}
    if not D.SPEC.is_valid(params, dev, problem, lookup("float32")):
        pytest.skip(f"{params} does not fit {dev.id}")
    q, k, v = _draw(rng, (2, 2, 6, 8), "float32"), _draw(rng, (2, 300, 2, 8), "float32"), _draw(rng, (2, 300, 2, 8), "float32")
    lengths = np.array([300, 131], np.int32)
    with forced(D.SPEC, params):
        o = isthmus.ops.decode_attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), dev.asarray(lengths))
    _close(o.to_numpy(), decode64(q, k, v, lengths)[0], "float32")


def test_the_rule_splits_long_caches_of_small_batches(dev):
    """More chunks where few (sequence, kv head) pairs would leave compute units idle."""
    few = D.rule({"batch": 1, "new": 1, "keys": 32768, "heads": 32, "kv_heads": 8, "head_dim": 128}, dev, None, {})
    many = D.rule({"batch": 64, "new": 1, "keys": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128}, dev, None, {})
    short = D.rule({"batch": 1, "new": 1, "keys": 16, "heads": 32, "kv_heads": 8, "head_dim": 128}, dev, None, {})
    assert many["SPLITS"] <= few["SPLITS"] and short["SPLITS"] == 1 and few["RB"] == 4


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_kv_append_and_paged_kv_append(dev, rng, dtype):
    _need(dev, dtype)
    b, L, kvh, d, n = 3, 37, 2, 24, 2
    k, v = _draw(rng, (b, L, kvh, d), dtype), _draw(rng, (b, L, kvh, d), dtype)
    kn, vn = _draw(rng, (b, n, kvh, d), dtype), _draw(rng, (b, n, kvh, d), dtype)
    pos = np.array([0, 20, L - 1], np.int32)  # the last sequence's second token is past the cache: dropped
    want_k, want_v = k.copy(), v.copy()
    for bb in range(b):
        for t in range(n):
            if pos[bb] + t < L:
                want_k[bb, pos[bb] + t], want_v[bb, pos[bb] + t] = kn[bb, t], vn[bb, t]
    kc, vc = dev.asarray(k), dev.asarray(v)
    got = isthmus.ops.kv_append(kc, vc, dev.asarray(kn), dev.asarray(vn), dev.asarray(pos))
    assert got[0] is kc and got[1] is vc
    assert np.array_equal(kc.to_numpy().view(np.uint16 if dtype != "float32" else np.uint32),
                          want_k.view(np.uint16 if dtype != "float32" else np.uint32))
    assert np.array_equal(vc.to_numpy(), want_v)
    kp, vp, table = _paged(rng, k, v)
    want_kp, want_vp, _ = kp.copy(), vp.copy(), None
    for bb in range(b):
        for t in range(n):
            p = pos[bb] + t
            if p < table.shape[1] * PAGE:  # the paged cache holds up to 48 keys: nothing dropped here
                want_kp[table[bb, p // PAGE], p % PAGE], want_vp[table[bb, p // PAGE], p % PAGE] = kn[bb, t], vn[bb, t]
    kpb, vpb = dev.asarray(kp), dev.asarray(vp)
    isthmus.ops.paged_kv_append(kpb, vpb, dev.asarray(kn[:, :]), dev.asarray(vn), dev.asarray(table), dev.asarray(pos))
    assert np.array_equal(kpb.to_numpy(), want_kp) and np.array_equal(vpb.to_numpy(), want_vp)
    # one token per sequence as (batch, kv_heads, head_dim)
    isthmus.ops.kv_append(kc, vc, dev.asarray(kn[:, 0]), dev.asarray(vn[:, 0]), dev.asarray(pos + 5))
    assert np.array_equal(kc.to_numpy()[0, 5], kn[0, 0])


def test_a_graph_of_append_and_paged_decode_replays_with_new_lengths_and_tables(dev, rng):
    """Append then decode, captured once; each replay takes the lengths and page table then in the
    buffers (the decode loop of a server: no re-capture per step)."""
    b, h, kvh, d, mp = 2, 4, 2, 8, 4
    pool = 2 * b * mp
    kp, vp = _draw(rng, (pool, PAGE, kvh, d), "float32"), _draw(rng, (pool, PAGE, kvh, d), "float32")
    kpb, vpb = dev.asarray(kp), dev.asarray(vp)
    q, kn, vn = (dev.asarray(_draw(rng, s, "float32")) for s in ((b, h, d), (b, kvh, d), (b, kvh, d)))
    table, pos, lengths = (dev.asarray(np.zeros(s, np.int32)) for s in ((b, mp), (b,), (b,)))
    with dev.capture() as graph:
        isthmus.ops.paged_kv_append(kpb, vpb, kn, vn, table, pos)
        o = isthmus.ops.paged_decode_attention(q, kpb, vpb, table, lengths)
    for step in range(3):
        t = rng.permutation(pool)[:b * mp].reshape(b, mp).astype(np.int32)
        p = rng.integers(0, mp * PAGE, size=b).astype(np.int32)
        for x, new in ((table, t), (pos, p), (lengths, p + 1)):
            x.copy_from(new)
        qh, knh, vnh = q.to_numpy(), kn.to_numpy(), vn.to_numpy()
        graph.launch()
        for bb in range(b):  # the host's copy of the pool, appended likewise
            kp[t[bb, p[bb] // PAGE], p[bb] % PAGE], vp[t[bb, p[bb] // PAGE], p[bb] % PAGE] = knh[bb], vnh[bb]
        kc = kp[t].reshape(b, mp * PAGE, kvh, d)
        vc = vp[t].reshape(b, mp * PAGE, kvh, d)
        _close(o.to_numpy(), decode64(qh[:, None], kc, vc, p + 1)[0][:, 0], "float32")
    graph.close()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_merge_attention_states(dev, rng, dtype):
    _need(dev, dtype)
    t, h, d = 37, 3, 13
    oa, ob = _draw(rng, (t, h, d), dtype), _draw(rng, (t, h, d), dtype)
    la, lb = (rng.standard_normal((t, h)) * 4).astype(np.float32), (rng.standard_normal((t, h)) * 4).astype(np.float32)
    la[0, 0], lb[1, 1], la[2, 2], lb[2, 2] = -np.inf, -np.inf, -np.inf, -np.inf  # empty sides, both empty
    m = np.maximum(la, lb).astype(np.float64)
    safe = np.where(np.isfinite(m), m, 0)
    wa, wb = np.exp(la - safe)[..., None], np.exp(lb - safe)[..., None]
    den = wa + wb
    want = (wa * oa.astype(np.float64) + wb * ob.astype(np.float64)) / np.where(den > 0, den, 1)
    want_lse = np.where(den[..., 0] > 0, m + np.log(np.where(den[..., 0] > 0, den[..., 0], 1)), -np.inf)
    out = dev.asarray(np.full(oa.shape, np.nan, oa.dtype))
    o, lse = isthmus.ops.merge_attention_states(dev.asarray(oa), dev.asarray(la), dev.asarray(ob), dev.asarray(lb),
                                                out=out)
    assert o is out
    _close(o.to_numpy(), want, dtype)
    _lse_close(lse.to_numpy(), want_lse, "float32")


def test_cascade_decoding_is_exact_to_the_unshared_result(dev, rng):
    """A prefix shared by every sequence, its attention computed once (all sequences' queries as one
    batch over it), merged with each sequence's attention over its own suffix: the result of each
    sequence's attention over prefix + suffix."""
    b, h, kvh, d, P, S = 5, 4, 2, 16, 70, 23
    q = _draw(rng, (b, h, d), "float32")
    kp, vp = _draw(rng, (1, P, kvh, d), "float32"), _draw(rng, (1, P, kvh, d), "float32")
    ks, vs = _draw(rng, (b, S, kvh, d), "float32"), _draw(rng, (b, S, kvh, d), "float32")
    lengths = rng.integers(1, S + 1, size=b).astype(np.int32)
    # once: the prefix, all b queries as the tokens of one sequence (not causal: every query sees it all)
    o_pre, lse_pre = isthmus.ops.attention(dev.asarray(q[None]), dev.asarray(kp), dev.asarray(vp), causal=False,
                                           return_lse=True)
    lse_pre = isthmus.ops.transpose(lse_pre.reshape(h, b))  # (1, heads, b) -> (tokens, heads)
    o_suf, lse_suf = isthmus.ops.decode_attention(dev.asarray(q), dev.asarray(ks), dev.asarray(vs),
                                                  dev.asarray(lengths), return_lse=True)
    o, lse = isthmus.ops.merge_attention_states(o_pre.reshape(b, h, d), lse_pre, o_suf, lse_suf)
    full_k = np.concatenate([np.repeat(kp, b, axis=0), ks], axis=1)
    full_v = np.concatenate([np.repeat(vp, b, axis=0), vs], axis=1)
    want, want_lse = decode64(q[:, None], full_k, full_v, lengths + P)
    _close(o.to_numpy(), want[:, 0], "float32")
    _lse_close(lse.to_numpy(), want_lse[:, 0], "float32")


def test_bad_arguments_are_typed_errors(dev, rng):
    f = lambda *s: dev.asarray(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    i32 = lambda *v: dev.asarray(np.array(v, np.int32))  # noqa: E731
    q, k = f(2, 6, 8), f(2, 10, 4, 8)
    lengths = i32(3, 4)
    with pytest.raises(InvalidArgumentError, match="kv heads must divide"):
        isthmus.ops.decode_attention(q, k, k, lengths)
    k = f(2, 10, 3, 8)
    with pytest.raises(InvalidArgumentError, match="head_dim 8 and the cache 4"):
        isthmus.ops.decode_attention(q, f(2, 10, 3, 4), f(2, 10, 3, 4), lengths)
    with pytest.raises(InvalidArgumentError, match="head_dim 512 is not supported"):
        isthmus.ops.decode_attention(f(2, 6, 512), f(2, 3, 3, 512), f(2, 3, 3, 512), lengths)
    with pytest.raises(InvalidArgumentError, match="12 new tokens do not fit a cache of 10"):
        isthmus.ops.decode_attention(f(2, 12, 6, 8), k, k, lengths)
    with pytest.raises(InvalidArgumentError, match="lengths has 3 elements; it must have 2"):
        isthmus.ops.decode_attention(q, k, k, i32(1, 2, 3))
    with pytest.raises(InvalidArgumentError, match="lengths must be int32"):
        isthmus.ops.decode_attention(q, k, k, f(2))
    with pytest.raises(InvalidArgumentError, match="q has batch 2 and k_cache 3"):
        isthmus.ops.decode_attention(q, f(3, 10, 3, 8), f(3, 10, 3, 8), lengths)
    with pytest.raises(InvalidArgumentError, match="k_cache has shape .* and v_cache"):
        isthmus.ops.decode_attention(q, k, f(2, 11, 3, 8), lengths)
    with pytest.raises(InvalidArgumentError, match="q must be"):
        isthmus.ops.decode_attention(f(6, 8), k, k, lengths)
    pages = f(7, 16, 3, 8)
    with pytest.raises(InvalidArgumentError, match="page_table must be int32 of shape"):
        isthmus.ops.paged_decode_attention(q, pages, pages, f(2, 1), lengths)
    with pytest.raises(InvalidArgumentError, match="out shares memory with q"):
        isthmus.ops.decode_attention(q, k, f(2, 10, 3, 8), lengths, out=q)
    with pytest.raises(InvalidArgumentError, match="k_new and v_new must both be"):
        isthmus.ops.kv_append(k, f(2, 10, 3, 8), f(2, 1, 3, 4), f(2, 1, 3, 4), lengths)
    with pytest.raises(InvalidArgumentError, match="11 new tokens per sequence do not fit a cache of 10"):
        isthmus.ops.kv_append(k, f(2, 10, 3, 8), f(2, 11, 3, 8), f(2, 11, 3, 8), lengths)
    with pytest.raises(InvalidArgumentError, match="k_cache shares memory with k_new"):
        isthmus.ops.kv_append(k, f(2, 10, 3, 8), k, k, lengths)
    with pytest.raises(InvalidArgumentError, match="positions has 1 elements"):
        isthmus.ops.kv_append(k, f(2, 10, 3, 8), f(2, 3, 8), f(2, 3, 8), i32(0))
    o = f(3, 2, 8)
    with pytest.raises(InvalidArgumentError, match="lse_b must be float32 of shape"):
        isthmus.ops.merge_attention_states(o, f(3, 2), o, f(2, 3))
    with pytest.raises(InvalidArgumentError, match="o_a has shape .* and o_b"):
        isthmus.ops.merge_attention_states(o, f(3, 2), f(3, 2, 7), f(3, 2))
