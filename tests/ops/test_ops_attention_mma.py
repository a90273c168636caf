"""attention's tensor-core path (attention.cl with MMA_PTX=1: mma.sync, ldmatrix, cp.async), which
devices with NVIDIA's mma.sync run for float16/bfloat16 at head dims that are multiples of 16 (CUDA
and NVIDIA's OpenCL: the GPU pass; every other device skips these, its portable twin is
test_ops_attention.py's). Odd lengths (tiles cut anywhere), causal masks aligned to the end, GQA,
windows, softcap, variable lengths with the lse, every tunable value, poisoned outputs, against a
float64 NumPy reference written here (test_ops_attention.attend64)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced
from isthmus.ops.specs.attention import MMA, emulated_mma, use_mma

from test_ops_attention import ATOL, _close, _draw, _varlen, _varlen_ref, attend64


def _mma_device(dev, dtype="float16", d=64):
    if not use_mma(dev, lookup(dtype), d):
        pytest.skip(f"{dev.id} has no tensor-core path for {dtype} (mma.sync: CUDA and NVIDIA's OpenCL, sm_80+)")


def _dense(dev, rng, dtype, b, sq, sk, h, kvh, d, **kw):
    q, k, v = _draw(rng, (b, sq, h, d), dtype), _draw(rng, (b, sk, kvh, d), dtype), _draw(rng, (b, sk, kvh, d), dtype)
    out = dev.asarray(np.full(q.shape, np.nan, q.dtype))
    lse_out = dev.asarray(np.full((b, h, sq), np.nan, np.float32))
    got, lse = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), return_lse=True, out=out,
                                     lse_out=lse_out, **kw)
    ref = [attend64(q[i], k[i], v[i], kw.get("causal", True), kw.get("scale"), kw.get("sliding_window"),
                    kw.get("softcap")) for i in range(b)]
    _close(got.to_numpy(), np.stack([r[0] for r in ref]), dtype)
    want = np.stack([r[1] for r in ref])
    got_lse = lse.to_numpy().astype(np.float64)
    assert (np.isinf(got_lse) == np.isinf(want)).all()
    np.testing.assert_allclose(got_lse[np.isfinite(want)], want[np.isfinite(want)], rtol=0, atol=ATOL[dtype])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", [
    # (batch, seq_q, seq_k, heads, kv_heads, head_dim, keywords)
    (2, 77, 77, 4, 2, 64, {}),                                            # GQA, causal, square
    (1, 130, 200, 4, 1, 128, {}),                                         # MQA, a chunk over a longer cache
    (2, 29, 11, 2, 2, 96, {}),                                            # more queries than keys
    (1, 65, 97, 2, 1, 256, {"causal": False}),
    (1, 150, 150, 2, 1, 128, {"sliding_window": 37, "softcap": 3.0, "scale": 0.05}),
    (1, 45, 300, 2, 2, 64, {"causal": False, "sliding_window": 50}),
    (3, 1, 70, 8, 1, 128, {}),                                            # one query row
    (1, 257, 257, 1, 1, 32, {}),
])
def test_tensor_core_attention_matches_float64(dev, rng, dtype, case):
    b, sq, sk, h, kvh, d, kw = case
    _mma_device(dev, dtype, d)
    _dense(dev, rng, dtype, b, sq, sk, h, kvh, d, **kw)


# every value of every tunable at least once (where it fits the device)
CONFIGS = [dict(WARPS=4, MI=1, BKV=64, STAGES=2, QREG=1), dict(WARPS=2, MI=2, BKV=16, STAGES=3, QREG=0),
           dict(WARPS=8, MI=1, BKV=32, STAGES=4, QREG=1), dict(WARPS=4, MI=2, BKV=32, STAGES=2, QREG=0),
           dict(WARPS=4, MI=1, BKV=128, STAGES=2, QREG=0), dict(WARPS=8, MI=1, BKV=64, STAGES=3, QREG=1)]


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
@pytest.mark.parametrize("d", [64, 128])
def test_every_tensor_core_config_is_right(dev, rng, params, d):
    _mma_device(dev, "bfloat16", d)
    problem = {"batch": 1, "seq_q": 100, "seq_k": 181, "heads": 2, "kv_heads": 1, "head_dim": d}
    if not MMA.is_valid(params, dev, problem, lookup("bfloat16")):
        pytest.skip(f"{params} does not fit {dev.id} at head_dim {d}")
    with forced(MMA, params):
        _dense(dev, rng, "bfloat16", 1, 100, 181, 2, 1, d, sliding_window=120)
        _dense(dev, rng, "float16", 1, 100, 181, 2, 1, d, causal=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tensor_core_variable_lengths_with_lse(dev, rng, dtype):
    _mma_device(dev, dtype, 128)
    q, k, v, cu_q, cu_k = _varlen(rng, [5, 0, 1, 130, 66], [5, 3, 7, 200, 40], 4, 2, 128, dtype)
    o, lse = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), return_lse=True,
                                   cu_seqlens_q=dev.asarray(cu_q), cu_seqlens_k=dev.asarray(cu_k))
    want, want_lse = _varlen_ref(q, k, v, cu_q, cu_k)
    _close(o.to_numpy(), want, dtype)
    got_lse = lse.to_numpy().astype(np.float64)
    assert (np.isinf(got_lse) == np.isinf(want_lse)).all()
    np.testing.assert_allclose(got_lse[np.isfinite(want_lse)], want_lse[np.isfinite(want_lse)], atol=ATOL[dtype])


def test_tensor_core_graph_replays_with_other_lengths(dev, rng):
    _mma_device(dev, "bfloat16", 64)
    q, k, v, cu_q, cu_k = _varlen(rng, [70, 12, 3], [90, 12, 20], 2, 1, 64, "bfloat16")
    bufs = [dev.asarray(t) for t in (q, k, v)]
    cq, ck = dev.asarray(cu_q), dev.asarray(cu_k)
    with dev.capture() as graph:
        o = isthmus.ops.attention(*bufs, cu_seqlens_q=cq, cu_seqlens_k=ck)
    for lens_q, lens_k in (([1, 1, 83], [1, 100]), ([85, 0, 0], [0, 0]), ([2, 81, 2], [30, 3])):
        new_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
        new_k = np.concatenate([[0], np.cumsum([lens_k[0], lens_k[1], 122 - sum(lens_k[:2])])]).astype(np.int32)
        cq.copy_from(new_q)
        ck.copy_from(new_k)
        graph.launch()
        _close(o.to_numpy(), _varlen_ref(q, k, v, new_q, new_k)[0], "bfloat16")
    graph.close()


# ---- the portable twin: the same path with its warp-level instructions emulated (MMA_EMU), on any
# OpenCL device (PoCL in CI): one warp a work-group
# (each config with one dtype and head dim 48 -- 3 k16 steps, 6 column fragments --: one build each,
# a PoCL build of the emulation takes 20-40 s)
EMU_CONFIGS = [("float16", dict(WARPS=1, MI=1, BKV=16, STAGES=2, QREG=1)),
               ("bfloat16", dict(WARPS=1, MI=2, BKV=32, STAGES=3, QREG=0))]


def _emu_device(dev):
    if dev.backend != "opencl" or dev.kind != "cpu":
        pytest.skip("the emulated tensor-core path runs on CPU OpenCL devices (MMA_EMU; GPUs run the real one)")
    if os.environ.get("POCL_MAX_PTHREAD_COUNT") != "1":
        # PoCL with several threads corrupts some work-groups of this barrier-heavy emulation (heads
        # of 32+ elements: each work-item's state across ~100 barriers); one thread runs it exactly
        pytest.skip("run on one PoCL thread by test_emulated_tensor_core_paths_on_one_pocl_thread")


@pytest.mark.parametrize("dtype,params", EMU_CONFIGS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items())
                         if isinstance(p, dict) else p)
@pytest.mark.parametrize("case", [
    (1, 37, 53, 4, 2, {}),                                     # GQA, a chunk over a longer cache
    (2, 29, 11, 2, 2, {}),                                     # more queries than keys
    (1, 40, 40, 2, 1, {"sliding_window": 7, "softcap": 2.0}),
    (1, 21, 45, 2, 1, {"causal": False, "sliding_window": 13}),
])
def test_emulated_tensor_core_attention_matches_float64(dev, rng, dtype, params, case):
    _emu_device(dev)
    b, sq, sk, h, kvh, kw = case
    with emulated_mma(), forced(MMA, params):
        _dense(dev, rng, dtype, b, sq, sk, h, kvh, 48, **kw)


def test_emulated_tensor_core_variable_lengths(dev, rng):
    _emu_device(dev)
    q, k, v, cu_q, cu_k = _varlen(rng, [5, 0, 1, 40], [5, 3, 7, 50], 2, 1, 48, "bfloat16")
    with emulated_mma(), forced(MMA, EMU_CONFIGS[1][1]):
        o, lse = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), return_lse=True,
                                       cu_seqlens_q=dev.asarray(cu_q), cu_seqlens_k=dev.asarray(cu_k))
    want, want_lse = _varlen_ref(q, k, v, cu_q, cu_k)
    _close(o.to_numpy(), want, "bfloat16")
    got_lse = lse.to_numpy().astype(np.float64)
    assert (np.isinf(got_lse) == np.isinf(want_lse)).all()
    np.testing.assert_allclose(got_lse[np.isfinite(want_lse)], want_lse[np.isfinite(want_lse)], atol=ATOL["bfloat16"])


def test_emulated_tensor_core_paths_on_one_pocl_thread(dev):
    """The emulated tests of attention's and decoding's tensor-core paths, in a process whose PoCL
    runs one thread."""
    if dev.backend != "opencl" or dev.kind != "cpu" or os.environ.get("POCL_MAX_PTHREAD_COUNT") == "1":
        pytest.skip("drives the emulated tests from a process with several PoCL threads")
    here = os.path.dirname(__file__)
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1", ISTHMUS_DEVICE=dev.id)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "-k",
                          f"emulated and {dev.id} and not one_pocl_thread",
                          os.path.join(here, "test_ops_attention_mma.py"),
                          os.path.join(here, "test_ops_decode_attention_mma.py")],
                         env=env, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1], run.stdout[-3000:]
