"""linear_attention: causal (chunked scan) and not (two reductions), each feature map, every chunk and
work-group size, every float dtype, a poisoned output, the state carried from a prefill through
recurrent one-token steps (and a graph of such a step replayed), against a float64 NumPy reference
written here by the definition; the typed error for each bad argument."""
import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.errors import InvalidArgumentError
from isthmus.ops.resolve import forced
from isthmus.ops.specs.linear_attention import SPEC

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": np.dtype(ml_dtypes.bfloat16)}
RTOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}


def linear64(q, k, v, causal=True, feature_map="elu1"):
    """By the definition: o_i = sum_j (phi(q_i).phi(k_j)) v_j / sum_j phi(q_i).phi(k_j), j <= i when causal."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    phi = {"elu1": lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0))), "relu": lambda x: np.maximum(x, 0),
           "identity": lambda x: x}[feature_map]
    o = np.zeros(q.shape)
    for b in range(q.shape[0]):
        for h in range(q.shape[2]):
            a = phi(q[b, :, h]) @ phi(k[b, :, h]).T
            if causal:
                a = np.tril(a)
            den = a.sum(axis=1)
            o[b, :, h] = np.where(den[:, None] != 0, (a @ v[b, :, h]) / np.where(den != 0, den, 1)[:, None], 0)
    return o


def _draw(rng, shape, dtype, positive=False):
    x = rng.standard_normal(shape)
    return (np.abs(x) if positive else x).astype(NP[dtype])


def _close(got, want, dtype):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("feature_map", ["elu1", "relu", "identity"])
def test_linear_attention_matches_float64(dev, rng, dtype, causal, feature_map):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    # identity on positive inputs (a feature map that can be negative has denominators near 0)
    q, k, v = (_draw(rng, (2, 37, 3, 24), dtype, positive=feature_map == "identity" and x != "v") for x in "qkv")
    out = dev.asarray(np.full(q.shape, np.nan, q.dtype))
    got = isthmus.ops.linear_attention(dev.asarray(q), dev.asarray(k), dev.asarray(v), causal=causal,
                                       feature_map=feature_map, out=out)
    assert got is out
    _close(got.to_numpy(), linear64(q, k, v, causal, feature_map), dtype)


@pytest.mark.parametrize("params", [{"WG": 8, "C": 4}, {"WG": 16, "C": 64}, {"WG": 32, "C": 8}, {"WG": 64, "C": 16},
                                    {"WG": 128, "C": 32}, {"WG": 256, "C": 4}])
def test_every_chunk_and_work_group_is_right(dev, rng, params):
    problem = {"batch": 1, "seq": 70, "heads": 2, "head_dim": 24}
    if not SPEC.is_valid(params, dev, problem, lookup("float32")):
        pytest.skip(f"{params} does not fit {dev.id}")
    q, k, v = (_draw(rng, (1, 70, 2, 24), "float32") for _ in "qkv")
    with forced(SPEC, params):
        got = isthmus.ops.linear_attention(dev.asarray(q), dev.asarray(k), dev.asarray(v))
    _close(got.to_numpy(), linear64(q, k, v), "float32")


def test_the_state_carries_a_prefill_into_recurrent_steps(dev, rng):
    """Prefill 20 tokens (state returned), then one token per call continuing the state in place: each
    step's output is the causal result at that position; a graph of the step replays likewise."""
    s, pre = 29, 20
    q, k, v = (_draw(rng, (2, s, 2, 24), "float32") for _ in "qkv")
    want = linear64(q, k, v)
    o, state = isthmus.ops.linear_attention(dev.asarray(q[:, :pre]), dev.asarray(k[:, :pre]), dev.asarray(v[:, :pre]),
                                            return_state=True, chunk=8)
    assert state.shape == (2, 2, 24, 25) and state.dtype == "float32"
    _close(o.to_numpy(), want[:, :pre], "float32")
    for t in range(pre, pre + 4):
        o1, st = isthmus.ops.linear_attention(*(dev.asarray(x[:, t:t + 1]) for x in (q, k, v)), state=state,
                                              return_state=True)
        assert st is state
        _close(o1.to_numpy(), want[:, t:t + 1], "float32")
    step = [dev.asarray(x[:, :1]) for x in (q, k, v)]
    with dev.capture() as graph:
        o1 = isthmus.ops.linear_attention(*step, state=state)
    for t in range(pre + 4, s):
        for buf, x in zip(step, (q, k, v)):
            buf.copy_from(np.ascontiguousarray(x[:, t:t + 1]))
        graph.launch()
        _close(o1.to_numpy(), want[:, t:t + 1], "float32")
    graph.close()


def test_bad_arguments_are_typed_errors(dev, rng):
    f = lambda *s: dev.asarray(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    q = f(1, 5, 2, 8)
    with pytest.raises(InvalidArgumentError, match="one shape"):
        isthmus.ops.linear_attention(q, f(1, 6, 2, 8), f(1, 6, 2, 8))
    with pytest.raises(InvalidArgumentError, match="feature_map = 'softmax'"):
        isthmus.ops.linear_attention(q, q, q, feature_map="softmax")
    with pytest.raises(InvalidArgumentError, match="chunk = 12"):
        isthmus.ops.linear_attention(q, q, q, chunk=12)
    with pytest.raises(InvalidArgumentError, match="head_dim 300 is not supported"):
        x = f(1, 2, 1, 300)
        isthmus.ops.linear_attention(x, x, x)
    with pytest.raises(InvalidArgumentError, match=r"state must be float32 of shape \(1, 2, 8, 9\)"):
        isthmus.ops.linear_attention(q, q, q, state=f(1, 2, 8, 8))
    with pytest.raises(InvalidArgumentError, match="must be 4-D"):
        isthmus.ops.linear_attention(f(5, 2, 8), q, q)
    with pytest.raises(InvalidArgumentError, match="out shares memory with q"):
        isthmus.ops.linear_attention(q, q, q, out=q)
