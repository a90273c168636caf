"""isthmus.ops.rope: rotary position embedding in place, against float64 references written here
from Hugging Face's formulas (rotate_half, GPT-J's rotate_every_two, llama3 and linear frequency
scaling): both layouts, partial rotary, q and k in one call, 3-D and 4-D, int32/int64 positions in
any order with repeats, every float dtype, typed errors, and a captured graph replayed with new
positions each time."""
import math

import numpy as np
import pytest

import isthmus
from isthmus import ops
from isthmus.dtypes import lookup

DTYPES = ("float32", "float16", "bfloat16")
LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}


# ---- references (float64, written from the formulas) ----------------------------------------------
def inv_freq64(dim: int, theta: float, scaling) -> np.ndarray:
    """Hugging Face's ``_compute_default_rope_parameters`` and the llama3 / linear rescaling, in float64."""
    inv = np.array([1.0 / theta ** (2 * i / dim) for i in range(dim // 2)])
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for f in inv:
            wavelen = 2 * math.pi / f
            if wavelen < old / high:  # high frequencies: unchanged
                out.append(f)
            elif wavelen > old / low:  # low frequencies: divided by factor
                out.append(f / factor)
            else:  # in between: blended by old / wavelen
                smooth = (old / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        return np.array(out)
    return inv


def rope64(x: np.ndarray, pos: np.ndarray, inv: np.ndarray, interleaved: bool, f32_angle: bool) -> np.ndarray:
    """x (..., heads, head_dim) turned in float64; ``f32_angle``: the angle float32(pos) * float32(inv)
    rounded to float32, as Hugging Face (and the kernel) compute it."""
    x = x.astype(np.float64)
    rot = 2 * len(inv)
    if f32_angle:
        angle = (pos.astype(np.float32)[..., None] * inv.astype(np.float32)).astype(np.float64)
    else:
        angle = pos.astype(np.float64)[..., None] * inv
    c, s = np.cos(angle)[..., None, :], np.sin(angle)[..., None, :]
    y = x.copy()
    if interleaved:  # GPT-J rotate_every_two
        x1, x2 = x[..., 0:rot:2], x[..., 1:rot:2]
        y[..., 0:rot:2], y[..., 1:rot:2] = x1 * c - x2 * s, x2 * c + x1 * s
    else:  # rotate_half: q * cat(cos, cos) + cat(-x2, x1) * cat(sin, sin)
        cos, sin = np.concatenate([c, c], -1), np.concatenate([s, s], -1)
        half = np.concatenate([-x[..., rot // 2:rot], x[..., :rot // 2]], -1)
        y[..., :rot] = x[..., :rot] * cos + half * sin
    return y


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _tol(dtype, pos_max=0.0):
    """Absolute error allowed on values of about 1: one rounding of the dtype (f32: a few ulp of the
    cos/sin), plus, against the pure float64 angle, float32's rounding of pos * inv_freq."""
    base = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    return base + 3 * pos_max * 2.0 ** -24


def _check(got, x, pos, inv, interleaved, dtype):
    scale = max(1.0, float(np.abs(x.astype(np.float64)).max()))
    hf = rope64(x, pos, inv, interleaved, f32_angle=True)
    assert np.abs(got.astype(np.float64) - hf).max() <= _tol(dtype) * scale * 2
    exact = rope64(x, pos, inv, interleaved, f32_angle=False)
    assert np.abs(got.astype(np.float64) - exact).max() <= _tol(dtype, float(np.abs(pos).max())) * scale * 2


# ---- behaviour --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("shape,rotary_dim", [((1, 1, 2), None), ((3, 5, 6), None), ((37, 3, 128), None),
                                              ((13, 4, 64), 32), ((2, 7, 3, 10), 4), ((1, 1, 7, 96), 64)])
def test_rope_turns_x_in_place_as_the_float64_reference(dev, rng, dtype, interleaved, shape, rotary_dim):
    _need(dev, dtype)
    x = rng.standard_normal(shape).astype(lookup(dtype).np)
    pos = rng.integers(0, 5000, shape[:-2]).astype(np.int32)
    pos.flat[0] = pos.flat[-1]  # (a repeat)
    bx = dev.asarray(x)
    assert ops.rope(bx, dev.asarray(pos), interleaved=interleaved, rotary_dim=rotary_dim) is bx
    inv = inv_freq64(rotary_dim or shape[-1], 10000.0, None)
    got = bx.to_numpy()
    _check(got, x, pos, inv, interleaved, dtype)
    if rotary_dim:  # the rest of each head: untouched, bit for bit
        np.testing.assert_array_equal(got[..., rotary_dim:].view(np.uint8), x[..., rotary_dim:].view(np.uint8))


@pytest.mark.parametrize("scaling", [None, LLAMA31, {"type": "linear", "factor": 4.0}, {"rope_type": "linear", "factor": 2.5},
                                     {"rope_type": "default"},
                                     {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}])
@pytest.mark.parametrize("pos_dtype", [np.int32, np.int64])
def test_rope_scaling_as_hugging_face_configs_write_it(dev, rng, scaling, pos_dtype):
    tokens, heads, hd = 29, 3, 128
    x = rng.standard_normal((tokens, heads, hd)).astype(np.float32)
    pos = rng.permutation(np.concatenate([rng.integers(0, 131072, tokens - 3), [0, 1, 1]])).astype(pos_dtype)
    bx = dev.asarray(x)
    ops.rope(bx, dev.asarray(pos), theta=500000.0, rope_scaling=scaling)
    _check(bx.to_numpy(), x, pos, inv_freq64(hd, 500000.0, scaling), False, "float32")


def test_the_llama3_reference_rescales_as_documented():
    """The test's own llama3 formula: high frequencies kept, low ones divided by factor, a blend between."""
    plain, scaled = inv_freq64(128, 500000.0, None), inv_freq64(128, 500000.0, LLAMA31)
    wavelen = 2 * np.pi / plain
    high, low = wavelen < 8192 / 4, wavelen > 8192 / 1
    assert high.any() and low.any() and (~high & ~low).any()
    np.testing.assert_array_equal(scaled[high], plain[high])
    np.testing.assert_allclose(scaled[low], plain[low] / 8, rtol=1e-15)
    mid = ~high & ~low
    assert np.all((scaled[mid] < plain[mid]) & (scaled[mid] > plain[mid] / 8))
    from isthmus.ops.specs.rope import inv_freq, scaling_key  # the op's table: the same numbers
    np.testing.assert_allclose(inv_freq(128, 500000.0, scaling_key("rope", LLAMA31)), scaled, rtol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_turns_q_and_k_in_one_call(dev, rng, dtype, interleaved):
    """GQA: 7 query heads, 3 kv heads; 4-D (batch, seq, heads, head_dim) with positions per (batch, seq)."""
    _need(dev, dtype)
    q = rng.standard_normal((2, 9, 7, 64)).astype(lookup(dtype).np)
    k = rng.standard_normal((2, 9, 3, 64)).astype(lookup(dtype).np)
    pos = rng.integers(0, 3000, (2, 9)).astype(np.int64)
    bq, bk = dev.asarray(q), dev.asarray(k)
    assert ops.rope(bq, dev.asarray(pos), theta=500000.0, interleaved=interleaved, k=bk, rope_scaling=LLAMA31) is bq
    inv = inv_freq64(64, 500000.0, LLAMA31)
    _check(bq.to_numpy(), q, pos, inv, interleaved, dtype)
    _check(bk.to_numpy(), k, pos, inv, interleaved, dtype)


def test_rope_positions_of_a_sequence_shared_by_the_batch(dev, rng):
    x = rng.standard_normal((3, 11, 2, 16)).astype(np.float32)
    seq = rng.integers(0, 100, 11).astype(np.int32)
    bx = dev.asarray(x)
    ops.rope(bx, dev.asarray(seq))
    _check(bx.to_numpy(), x, np.broadcast_to(seq, (3, 11)), inv_freq64(16, 10000.0, None), False, "float32")


def test_rope_replays_a_captured_graph_with_new_positions_each_time(dev, rng):
    """A decode step's rope captured once: positions (and x) written between replays, no re-capture;
    and a positions buffer swapped in with graph.bind."""
    q = rng.standard_normal((4, 8, 64)).astype(np.float32)
    k = rng.standard_normal((4, 2, 64)).astype(np.float32)
    bq, bk, bpos = dev.asarray(q), dev.asarray(k), dev.asarray(np.zeros(4, np.int32))
    with dev.capture() as graph:
        ops.rope(bq, bpos, theta=500000.0, k=bk, rope_scaling=LLAMA31)
    inv = inv_freq64(64, 500000.0, LLAMA31)
    try:
        for step in range(3):
            pos = rng.integers(0, 100000, 4).astype(np.int32)
            bpos.copy_from(pos)
            bq.copy_from(q)
            bk.copy_from(k)
            graph.launch()
            _check(bq.to_numpy(), q, pos, inv, False, "float32")
            _check(bk.to_numpy(), k, pos, inv, False, "float32")
        other = rng.integers(0, 100, 4).astype(np.int32)
        graph.bind(0, "positions", dev.asarray(other))
        bq.copy_from(q)
        graph.launch()
        _check(bq.to_numpy(), q, other, inv, False, "float32")
    finally:
        graph.close()


def test_a_prepared_rope_plan_takes_new_positions_by_bind(dev, rng):
    """dev.library("rope").prepare(...): the Java plans' path; positions rebound without preparing again."""
    x = rng.standard_normal((5, 3, 32)).astype(np.float32)
    bx, bpos = dev.asarray(x), dev.asarray(np.zeros(5, np.int64))
    plan = dev.library("rope").prepare(bx, bpos, theta=500000.0, rope_scaling=LLAMA31)
    inv = inv_freq64(32, 500000.0, LLAMA31)
    try:
        for _ in range(2):
            pos = rng.integers(0, 50000, 5).astype(np.int64)
            plan.bind("positions", dev.asarray(pos))
            bx.copy_from(x)
            plan.launch()
            _check(bx.to_numpy(), x, pos, inv, False, "float32")
    finally:
        plan.close()


def test_rope_of_nothing_launches_nothing(dev):
    x = dev.zeros((0, 4, 8), np.float32)
    assert ops.rope(x, dev.zeros((0,), np.int32)) is x


# ---- typed errors -----------------------------------------------------------------------------------
def test_rope_errors_name_what_is_wrong(dev):
    x = dev.zeros((3, 2, 8), np.float32)
    pos = dev.zeros((3,), np.int32)
    cases = [
        (lambda: ops.rope(x, pos, rope_scaling={"rope_type": "yarn", "factor": 4.0}),
         r"rope_scaling\['rope_type'\] = 'yarn' is not supported"),
        (lambda: ops.rope(x, pos, rope_scaling={"factor": 4.0}), "no 'rope_type'"),
        (lambda: ops.rope(x, pos, rope_scaling={"rope_type": "linear"}), "needs the key 'factor'"),
        *[(lambda key=key: ops.rope(x, pos, rope_scaling={kk: v for kk, v in LLAMA31.items() if kk != key}),
           f"needs the key '{key}'") for key in ("factor", "low_freq_factor", "high_freq_factor",
                                                 "original_max_position_embeddings")],
        (lambda: ops.rope(x, pos, rope_scaling={**LLAMA31, "factor": -1}), r"rope_scaling\['factor'\] must be a positive"),
        (lambda: ops.rope(x, pos, rope_scaling={**LLAMA31, "low_freq_factor": 4.0}), "must be less than"),
        (lambda: ops.rope(x, pos, rope_scaling="llama3"), "rope_scaling must be a dict"),
        (lambda: ops.rope(x, pos, theta=0.0), "theta must be a positive number"),
        (lambda: ops.rope(x, pos, theta="1e4"), "theta must be a positive number"),
        (lambda: ops.rope(x, pos, rotary_dim=3), "rotary_dim must be an even integer"),
        (lambda: ops.rope(x, pos, rotary_dim=10), "rotary_dim must be an even integer"),
        (lambda: ops.rope(dev.zeros((3, 2, 7), np.float32), pos), "head_dim .its last dimension. is 7, odd; .*pass "
                                                                  "rotary_dim"),
        (lambda: ops.rope(x, pos, interleaved=1), "interleaved must be True or False"),
        (lambda: ops.rope(x, dev.zeros((3,), np.float32)), "positions must be int32 or int64"),
        (lambda: ops.rope(x, dev.zeros((4,), np.int32)), r"positions has shape \(4,\); it must be x.shape\[:-2\]"),
        (lambda: ops.rope(dev.zeros((3, 8), np.float32), pos), "x must be .tokens, heads, head_dim."),
        (lambda: ops.rope(x, pos, k=dev.zeros((3, 2, 6), np.float32)), "k has shape"),
        (lambda: ops.rope(x, pos, k=dev.zeros((3, 2, 8), np.float16)), "k has dtype float16"),
        (lambda: ops.rope(x, pos, k=x), "k shares memory with x"),
        (lambda: ops.rope(x, np.zeros(3, np.int32)), "must be an isthmus Buffer"),
        (lambda: ops.rope(dev.zeros((3, 2, 8), np.float64), pos), "rope does not support float64"),
    ]
    for call, message in cases:
        with pytest.raises(isthmus.InvalidArgumentError, match=message):
            call()


def test_a_rope_scaling_seen_before_is_checked_again_when_it_changes(dev, rng):
    """The op remembers a config's checked form by its content (a decode loop passes the same dict
    each step): the same dict changed in place, or a bool where a number was, is checked anew."""
    x = dev.asarray(rng.standard_normal((3, 2, 8)).astype(np.float32))
    pos = dev.asarray(np.arange(3, dtype=np.int32))
    config = dict(LLAMA31)
    ops.rope(x, pos, theta=500000.0, rope_scaling=config)
    ops.rope(x, pos, theta=500000.0, rope_scaling=config)
    config["low_freq_factor"] = 9.0
    with pytest.raises(isthmus.InvalidArgumentError, match="must be less than"):
        ops.rope(x, pos, theta=500000.0, rope_scaling=config)
    ops.rope(x, pos, rope_scaling={"rope_type": "linear", "factor": 1})
    with pytest.raises(isthmus.InvalidArgumentError, match=r"rope_scaling\['factor'\] must be a positive number"):
        ops.rope(x, pos, rope_scaling={"rope_type": "linear", "factor": True})
    with pytest.raises(isthmus.InvalidArgumentError, match=r"rope_scaling\['factor'\] must be a positive number"):
        ops.rope(x, pos, rope_scaling={"rope_type": "linear", "factor": [2.0]})  # (unhashable: checked, not kept)
