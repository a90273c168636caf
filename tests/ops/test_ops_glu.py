"""isthmus.ops.silu_mul (SwiGLU) and gelu_mul (GeGLU, tanh and erf forms): separate gate and up,
or one gate_up buffer split in halves; every float dtype, odd widths, leading dimensions, out=
poisoned with NaN, float64 references written here, typed errors, a captured graph replayed."""
import math

import numpy as np
import pytest

import isthmus
from isthmus import ops
from isthmus.dtypes import lookup

DTYPES = ("float32", "float64", "float16", "bfloat16")
ERF = np.frompyfunc(math.erf, 1, 1)


def silu64(g, u):
    g, u = g.astype(np.float64), u.astype(np.float64)
    return g / (1 + np.exp(-g)) * u


def gelu64(g, u, approximate):
    g, u = g.astype(np.float64), u.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3))) * u
    return 0.5 * g * (1 + ERF(g / np.sqrt(2)).astype(np.float64)) * u


OPS = {"silu": (lambda *a, **k: ops.silu_mul(*a, **k), silu64),
       "gelu_tanh": (lambda *a, **k: ops.gelu_mul(*a, approximate="tanh", **k), lambda g, u: gelu64(g, u, "tanh")),
       "gelu_none": (lambda *a, **k: ops.gelu_mul(*a, approximate="none", **k), lambda g, u: gelu64(g, u, "none"))}


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _close(got, want, dtype):
    """One rounding of the dtype on f32 arithmetic (f64: a few ulp)."""
    rel = {"float64": 1e-13, "float32": 1e-6, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rel, atol=rel)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (3,), (1000,), (4097,), (5, 1), (3, 4097), (2, 3, 1000), (65, 14336 // 8)])
def test_gated_units_match_the_float64_reference(dev, rng, op, dtype, shape):
    _need(dev, dtype)
    call, ref = OPS[op]
    np_dt = lookup(dtype).np
    g = (rng.standard_normal(shape) * 3).astype(np_dt)
    u = rng.standard_normal(shape).astype(np_dt)
    out = dev.asarray(np.full(shape, np.nan, np.float32).astype(np_dt))  # poisoned
    assert call(dev.asarray(g), dev.asarray(u), out=out) is out
    _close(out.to_numpy(), ref(g, u), dtype)
    # one gate_up buffer: the last dimension's first half is the gate, the second up
    fused = dev.asarray(np.concatenate([g, u], axis=-1))
    y = call(fused)
    assert y.shape == shape and y.dtype == np_dt
    _close(y.to_numpy(), ref(g, u), dtype)


def test_one_buffer_as_both_gate_and_up_is_not_taken_for_gate_up(dev, rng):
    """silu_mul(x) (x a gate_up buffer) after silu_mul(x, x) (gate and up the same buffer): two
    problems of one shape, each launched with its own geometry."""
    x = rng.standard_normal((3, 10)).astype(np.float32)
    bx = dev.asarray(x)
    _close(ops.silu_mul(bx, bx).to_numpy(), silu64(x, x), "float32")  # one row of 30: one group
    _close(ops.silu_mul(bx).to_numpy(), silu64(x[:, :5], x[:, 5:]), "float32")  # 3 rows: a group each


def test_extreme_gates_stay_finite_where_the_product_is(dev):
    g = np.array([-100, -30, -1e-30, 0, 1e-30, 30, 100, 88.8], np.float32)
    u = np.ones_like(g)
    for op, (call, ref) in OPS.items():
        got = call(dev.asarray(g), dev.asarray(u)).to_numpy()
        assert np.all(np.isfinite(got)), op
        _close(got, ref(g, u), "float32")


def test_a_captured_silu_mul_replays_on_new_data(dev, rng):
    gate_up = dev.asarray(rng.standard_normal((4, 2 * 37)).astype(np.float32))
    out = dev.empty((4, 37), np.float32)
    with dev.capture() as graph:
        ops.silu_mul(gate_up, out=out)
    try:
        for _ in range(3):
            h = rng.standard_normal((4, 74)).astype(np.float32)
            gate_up.copy_from(h)
            graph.launch()
            _close(out.to_numpy(), silu64(h[:, :37], h[:, 37:]), "float32")
    finally:
        graph.close()


def test_empty_inputs_give_empty_results(dev):
    assert ops.silu_mul(dev.zeros((0, 8), np.float32)).shape == (0, 4)
    assert ops.gelu_mul(dev.zeros((3, 0), np.float32), dev.zeros((3, 0), np.float32)).shape == (3, 0)


def test_gated_unit_errors_are_typed(dev):
    g, u = dev.zeros((3, 8), np.float32), dev.zeros((3, 8), np.float32)
    cases = [(lambda: ops.silu_mul(g, dev.zeros((3, 7), np.float32)), r"gate has shape \(3, 8\) and up \(3, 7\)"),
             (lambda: ops.silu_mul(dev.zeros((3, 7), np.float32)), "must be even"),
             (lambda: ops.silu_mul(g, dev.zeros((3, 8), np.float16)), "up has dtype float16"),
             (lambda: ops.gelu_mul(g, u, approximate="erf"), "approximate must be 'tanh' or 'none', got 'erf'"),
             (lambda: ops.gelu_mul(g, u, approximate=None), "approximate must be 'tanh' or 'none'"),
             (lambda: ops.silu_mul(g, u, out=dev.zeros((3, 4), np.float32)), r"out has shape \(3, 4\)"),
             (lambda: ops.silu_mul(g, u, out=g), "out shares memory with gate"),
             (lambda: ops.silu_mul(g, u, out=u), "out shares memory with up"),
             (lambda: ops.silu_mul(dev.zeros((), np.float32)), "at least one dimension"),
             (lambda: ops.silu_mul(np.zeros(4, np.float32)), "must be an isthmus Buffer"),
             (lambda: ops.silu_mul(dev.zeros((3, 8), np.int32)), "silu_mul does not support int32")]
    for call, message in cases:
        with pytest.raises(isthmus.InvalidArgumentError, match=message):
            call()
