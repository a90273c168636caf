"""decode_attention and paged_decode_attention's tensor-core path (decode_attention.cl with
MMA_PTX=1: one warp per 16 rows of a (sequence, kv head) and chunk of keys, mma.sync, cp.async),
which devices with mma.sync run for float16/bfloat16 at head dims that are multiples of 16 up to
128 (the GPU pass: CUDA and NVIDIA's OpenCL; every other device skips these, the portable twin is
test_ops_decode_attention.py's). GQA groups of 8 and 32 (one and two m16 row blocks), several new
tokens, odd and clamped lengths, empty sequences, page tables whose unused entries lie outside the
pool, every tunable value, against test_ops_decode_attention.decode64 (float64)."""
from contextlib import nullcontext as _nothing

import os

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced
from isthmus.ops.specs import decode_attention as D
from isthmus.ops.specs.attention import emulated_mma

from test_ops_decode_attention import _close, _draw, _lse_close, _paged, decode64


def _mma_device(dev, dtype, d=128):
    if not D.use_mma(dev, lookup(dtype), d):
        pytest.skip(f"{dev.id} has no tensor-core decode for {dtype} (mma.sync: CUDA and NVIDIA's OpenCL, sm_80+)")


def _check(dev, rng, dtype, b, n, L, h, kvh, d, lengths, params=None):
    q, k, v = _draw(rng, (b, n, h, d), dtype), _draw(rng, (b, L, kvh, d), dtype), _draw(rng, (b, L, kvh, d), dtype)
    want, want_lse = decode64(q, k, v, lengths)
    qq = q[:, 0] if n == 1 else q
    shape = qq.shape
    out = dev.asarray(np.full(shape, np.nan, q.dtype))
    with forced(D.MMA, params) if params else _nothing():
        o, lse = isthmus.ops.decode_attention(dev.asarray(qq), dev.asarray(k), dev.asarray(v), dev.asarray(lengths),
                                              return_lse=True, out=out)
    assert o is out
    _close(o.to_numpy(), want.reshape(shape), dtype)
    _lse_close(lse.to_numpy(), want_lse.reshape(shape[:-1]), dtype)
    kp, vp, table = _paged(rng, k, v)
    # entries past each sequence's length point outside the pool (pages not allocated yet)
    for bb in range(b):
        table[bb, -(-max(int(lengths[bb]), 0) // 16):] = -1
    with forced(D.PAGED_MMA, params) if params else _nothing():
        o, lse = isthmus.ops.paged_decode_attention(dev.asarray(qq), dev.asarray(kp), dev.asarray(vp),
                                                    dev.asarray(table), dev.asarray(lengths), return_lse=True)
    _close(o.to_numpy(), want.reshape(shape), dtype)
    _lse_close(lse.to_numpy(), want_lse.reshape(shape[:-1]), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("b,n,L,h,kvh,d", [(3, 1, 301, 16, 2, 128),   # GQA 8: half an m16 block
                                           (2, 3, 97, 16, 2, 64),     # 3 new tokens x 8 heads: two blocks
                                           (1, 1, 1000, 32, 1, 128),  # MQA, 32 heads: two blocks
                                           (2, 1, 33, 4, 4, 96),      # MHA
                                           (2, 3, 3, 8, 1, 32)])      # a cache as long as the new tokens
def test_tensor_core_decode_matches_float64(dev, rng, dtype, b, n, L, h, kvh, d):
    _mma_device(dev, dtype, d)
    lengths = rng.integers(0, L + 1, size=b).astype(np.int32)
    lengths[0] = L
    if L == n:  # the other sequence holds fewer keys than its new tokens: rows that see nothing
        lengths[1:] = rng.integers(0, n, size=b - 1)
    _check(dev, rng, dtype, b, n, L, h, kvh, d, lengths)


# every value of every tunable at least once (where it fits the device)
CONFIGS = [dict(BKV=16, STAGES=2, SPLITS=1), dict(BKV=32, STAGES=3, SPLITS=2), dict(BKV=64, STAGES=4, SPLITS=4),
           dict(BKV=16, STAGES=5, SPLITS=8), dict(BKV=32, STAGES=6, SPLITS=16), dict(BKV=64, STAGES=2, SPLITS=32),
           dict(BKV=16, STAGES=3, SPLITS=64), dict(BKV=32, STAGES=2, SPLITS=128), dict(BKV=16, STAGES=4, SPLITS=256)]


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_every_tensor_core_decode_config_is_right(dev, rng, params):
    _mma_device(dev, "bfloat16")
    problem = {"batch": 2, "new": 1, "keys": 700, "heads": 16, "kv_heads": 2, "head_dim": 128}
    if not D.MMA.is_valid(params, dev, problem, lookup("bfloat16")):
        pytest.skip(f"{params} does not fit {dev.id}")
    _check(dev, rng, "bfloat16", 2, 1, 700, 16, 2, 128, np.array([700, 333], np.int32), params)


def test_tensor_core_decode_clamps_lengths_past_the_cache(dev, rng):
    _mma_device(dev, "float16")
    _check(dev, rng, "float16", 2, 1, 48, 8, 1, 128, np.array([10 ** 6, 0], np.int32))


# ---- the portable twin (MMA_EMU, opencl/attn_mma.h): the same path with its warp-level
# instructions emulated, on CPU OpenCL devices (PoCL in CI), driven on one PoCL thread by
# test_ops_attention_mma.test_emulated_tensor_core_paths_on_one_pocl_thread
# one config (a PoCL build of this emulation takes about 2 minutes): 64-key tiles (both words of the key
# mask), a 3-stage ring, 4 chunks; the GPU pass runs every config for real
EMU_CONFIGS = [("bfloat16", dict(BKV=64, STAGES=3, SPLITS=4))]


@pytest.mark.parametrize("dtype,params", EMU_CONFIGS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items())
                         if isinstance(p, dict) else p)
@pytest.mark.parametrize("b,n,L,h,kvh", [(2, 1, 97, 16, 2),    # GQA 8
                                         (2, 3, 70, 8, 1),     # 24 rows: two blocks
                                         (1, 1, 40, 2, 2)])
def test_emulated_tensor_core_decode_matches_float64(dev, rng, dtype, params, b, n, L, h, kvh):
    if dev.backend != "opencl" or dev.kind != "cpu" or os.environ.get("POCL_MAX_PTHREAD_COUNT") != "1":
        pytest.skip("run on one PoCL thread by test_emulated_tensor_core_paths_on_one_pocl_thread")
    lengths = rng.integers(0, L + 1, size=b).astype(np.int32)
    lengths[0] = L
    with emulated_mma():
        _check(dev, rng, dtype, b, n, L, h, kvh, 32, lengths, params)
