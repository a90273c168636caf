"""cross_entropy and fused_linear_cross_entropy against NumPy float64 references written here
(log-softmax, torch's label smoothing and ignore_index, PaLM's z-loss, the gradients), at odd sizes,
in every float dtype, into outputs poisoned with NaN, the gradient in place over the logits, every
tunable value, inside a captured graph, and the typed error for each bad input."""
import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.errors import InvalidArgumentError, UnsupportedDtypeError
from isthmus.ops.resolve import forced, forget_resolved
from isthmus.ops.specs.cross_entropy import FUSED, SPEC

ce = isthmus.ops.cross_entropy
flce = isthmus.ops.fused_linear_cross_entropy
BF16 = np.dtype(ml_dtypes.bfloat16)
# relative error allowed (norm of the difference over the reference's norm), per logits dtype
TOL = {"float32": 2e-5, "float64": 1e-11, "float16": 2e-3, "bfloat16": 1.6e-2}


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def ce64(x, t, ignore_index=-100, label_smoothing=0.0, reduction="mean", z_loss=0.0):
    """(loss, d loss / d x) in float64, as torch.nn.functional.cross_entropy (+ z_loss * lse^2 a row)."""
    x = np.asarray(x, np.float64)
    x2 = x.reshape(-1, x.shape[-1])
    t2 = np.asarray(t).reshape(-1).astype(np.int64)
    c = x2.shape[1]
    m = x2.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(x2 - m).sum(axis=1))
    logp = x2 - lse[:, None]                              # log-softmax
    valid = t2 != ignore_index
    tt = np.where(valid, t2, 0)
    nll = -logp[np.arange(len(tt)), tt]
    smooth = -logp.sum(axis=1) / c                        # torch: the uniform part, over C classes
    rows = (1 - label_smoothing) * nll + label_smoothing * smooth + z_loss * lse ** 2
    rows = np.where(valid, rows, 0.0)
    n = valid.sum()
    if reduction == "none":
        loss = rows.reshape(np.shape(t))
    elif reduction == "sum":
        loss = np.array([rows.sum()])
    else:
        loss = np.array([rows.sum() / n if n else np.nan])
    scale = (1.0 / n if n else 0.0) if reduction == "mean" else 1.0
    onehot = np.zeros_like(x2)
    onehot[np.arange(len(tt)), tt] = 1.0
    p = np.exp(logp)
    g = p * (1 + 2 * z_loss * lse[:, None]) - label_smoothing / c - (1 - label_smoothing) * onehot
    g = np.where(valid[:, None], g * scale, 0.0)
    return loss, g.reshape(x.shape)


def _err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or (np.isnan(got) != np.isnan(want)).any():
        return np.inf
    got, want = np.nan_to_num(got), np.nan_to_num(want)  # (NaN where the reference has NaN: all ignored)
    scale = np.linalg.norm(want.ravel()) or 1.0
    return float(np.linalg.norm((got - want).ravel())) / scale


def _data(rng, shape, dtype, ignore=0.15, ignore_index=-100, tdtype=np.int64):
    x = (3 * rng.standard_normal(shape)).astype(_np_dtype(dtype))
    t = rng.integers(0, shape[-1], size=shape[:-1]).astype(tdtype)
    t[rng.random(shape[:-1]) < ignore] = ignore_index
    return x, t


# rows, cols: 1, primes, around powers of two, a vocabulary width + 1
SHAPES = [(1, 1), (3, 7), (13, 1000), (5, 4097), (2, 32001)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_and_gradient_match_float64(dev, rng, dtype, reduction):
    _need(dev, dtype)
    for i, shape in enumerate(SHAPES):
        tdtype = (np.int32, np.int64)[i % 2]
        smoothing, z = [(0.0, 0.0), (0.1, 1e-4), (0.0, 1e-3), (0.25, 0.0), (0.05, 1e-4)][i]
        x, t = _data(rng, shape, dtype, tdtype=tdtype)
        want, want_g = ce64(x, t, -100, smoothing, reduction, z)
        bx, bt = dev.asarray(x), dev.asarray(t)
        out = dev.asarray(np.full(want.shape, np.nan, x.dtype))
        loss = ce(bx, bt, label_smoothing=smoothing, reduction=reduction, z_loss=z, out=out)
        assert loss is out and loss.dtype == x.dtype
        assert _err(out.to_numpy(), want) <= TOL[dtype], (shape, "loss")
        gout = dev.asarray(np.full(shape, np.nan, x.dtype))
        loss, g = ce(bx, bt, label_smoothing=smoothing, reduction=reduction, grad=True, z_loss=z, grad_out=gout)
        assert g is gout
        assert _err(loss.to_numpy(), want) <= TOL[dtype], (shape, "loss with grad")
        assert _err(g.to_numpy(), want_g) <= TOL[dtype], (shape, "grad")
        assert (bx.to_numpy().view(np.uint8) == x.view(np.uint8)).all()  # the logits untouched


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gradient_in_place_over_the_logits(dev, rng, dtype):
    _need(dev, dtype)
    for shape in [(7, 257), (3, 5, 1031), (2, 2, 3, 9)]:   # leading dimensions flattened into rows
        x, t = _data(rng, shape, dtype)
        want, want_g = ce64(x, t, label_smoothing=0.1, z_loss=1e-4)
        bx = dev.asarray(x)
        loss, g = ce(bx, dev.asarray(t), label_smoothing=0.1, grad=True, z_loss=1e-4, grad_out=bx)
        assert g is bx
        assert _err(loss.to_numpy(), want) <= TOL[dtype]
        assert _err(bx.to_numpy(), want_g) <= TOL[dtype]
        none = ce(dev.asarray(x), dev.asarray(t), reduction="none")
        assert none.shape == shape[:-1]
        assert _err(none.to_numpy(), ce64(x, t, reduction="none")[0]) <= TOL[dtype]


def test_a_new_gradient_buffer_and_the_ignore_index(dev, rng):
    x, t = _data(rng, (11, 300), "float32", ignore=0.4, ignore_index=7)
    t[t == 7] = 7  # (the ignored ones)
    want, want_g = ce64(x, t, ignore_index=7)
    loss, g = ce(dev.asarray(x), dev.asarray(t), ignore_index=7, grad=True)
    assert g.shape == x.shape and g.dtype == np.float32
    assert _err(loss.to_numpy(), want) <= TOL["float32"]
    assert _err(g.to_numpy(), want_g) <= TOL["float32"]
    assert (g.to_numpy()[t == 7] == 0).all()


def test_every_target_ignored(dev, rng):
    """As torch: the mean is NaN (0 / 0), the sum 0, every gradient 0."""
    x = rng.standard_normal((4, 50)).astype(np.float32)
    t = np.full(4, -100, np.int64)
    bx, bt = dev.asarray(x), dev.asarray(t)
    loss, g = ce(bx, bt, grad=True)
    assert np.isnan(loss.to_numpy()).all() and (g.to_numpy() == 0).all()
    assert ce(bx, bt, reduction="sum").to_numpy()[0] == 0
    assert (ce(bx, bt, reduction="none").to_numpy() == 0).all()


def test_every_tunable_value(dev, rng):
    """Each WG and VPT value, forced, with the gradient (the config sweep runs the loss alone)."""
    x, t = _data(rng, (5, 1031), "float32")
    want, want_g = ce64(x, t, label_smoothing=0.05, z_loss=1e-3)
    bt = dev.asarray(t)
    values = {tu.name: tu.values for tu in SPEC.tunables}
    configs = [{"WG": wg, "ROWLOOP": 0, "VPT": values["VPT"][i % len(values["VPT"])]}
               for i, wg in enumerate(values["WG"]) if wg >= 16]
    configs += [{"WG": 64, "ROWLOOP": 0, "VPT": v} for v in values["VPT"]]
    configs += [{"WG": wg, "ROWLOOP": 1, "VPT": 4} for wg in values["WG"] if wg <= 64]  # a row per item (CPUs)
    forget_resolved()
    ran = 0
    try:
        for params in configs:
            if not SPEC.is_valid(params, dev):
                assert params["ROWLOOP"] == 1 and dev.kind != "cpu", params
                continue
            ran += 1
            with forced(SPEC, params):
                loss, g = ce(dev.asarray(x), bt, label_smoothing=0.05, grad=True, z_loss=1e-3)
            assert _err(loss.to_numpy(), want) <= TOL["float32"], params
            assert _err(g.to_numpy(), want_g) <= TOL["float32"], params
    finally:
        forget_resolved()
    assert ran >= len(values["WG"]) - 4


def test_an_out_of_range_target_is_an_error_before_anything_is_written(dev, rng):
    x, t = _data(rng, (6, 40), "float32", ignore=0)
    for bad in (40, -1, 1000):
        t2 = t.copy()
        t2[3] = bad
        bx = dev.asarray(x)
        with pytest.raises(InvalidArgumentError, match=r"1 targets are out of range.*\[0, 40\)"):
            ce(bx, dev.asarray(t2), grad=True, grad_out=bx)
        assert (bx.to_numpy() == x).all()
    # unchecked: that row's loss and gradient are NaN, the others right
    t2 = t.copy()
    t2[3] = 40
    loss, g = ce(dev.asarray(x), dev.asarray(t2), reduction="none", grad=True, check_targets=False)
    lo, go = loss.to_numpy(), g.to_numpy()
    assert np.isnan(lo[3]) and np.isnan(go[3]).all()
    keep = np.arange(6) != 3
    want, want_g = ce64(x[keep], t[keep], reduction="none")
    assert _err(lo[keep], want) <= TOL["float32"] and _err(go[keep], want_g) <= TOL["float32"]


def test_bad_arguments_are_typed_errors(dev, rng):
    x, t = _data(rng, (4, 10), "float32")
    bx, bt = dev.asarray(x), dev.asarray(t)
    with pytest.raises(InvalidArgumentError, match="reduction='avg'"):
        ce(bx, bt, reduction="avg")
    with pytest.raises(InvalidArgumentError, match=r"targets have shape \(3,\); they must have shape \(4,\)"):
        ce(bx, dev.asarray(t[:3]))
    with pytest.raises(UnsupportedDtypeError, match="targets have dtype float32"):
        ce(bx, dev.asarray(t.astype(np.float32)))
    with pytest.raises(UnsupportedDtypeError, match="cross_entropy does not support int32"):
        ce(dev.asarray(t.astype(np.int32).reshape(4, 1)), bt)
    with pytest.raises(InvalidArgumentError, match="logits must be an isthmus Buffer"):
        ce(x, bt)
    with pytest.raises(InvalidArgumentError, match=r"label_smoothing=1.5; it must be in \[0, 1\]"):
        ce(bx, bt, label_smoothing=1.5)
    with pytest.raises(InvalidArgumentError, match="ignore_index must be an integer"):
        ce(bx, bt, ignore_index="x")
    with pytest.raises(InvalidArgumentError, match="z_loss=inf"):
        ce(bx, bt, z_loss=float("inf"))
    with pytest.raises(InvalidArgumentError, match="grad_out is given but grad=False"):
        ce(bx, bt, grad_out=bx)
    with pytest.raises(InvalidArgumentError, match=r"grad_out has shape \(40,\)"):
        ce(bx, bt, grad=True, grad_out=dev.empty((40,), np.float32))
    with pytest.raises(InvalidArgumentError, match="grad_out has dtype float64"):
        ce(bx, bt, grad=True, grad_out=dev.empty((4, 10), np.float64))
    with pytest.raises(InvalidArgumentError, match=r"out has shape \(4,\), the result has shape \(1,\)"):
        ce(bx, bt, out=dev.empty((4,), np.float32))
    with pytest.raises(InvalidArgumentError, match="out shares memory with logits"):
        ce(bx, bt, out=bx)
    with pytest.raises(InvalidArgumentError, match="C >= 1"):
        ce(dev.empty((3, 0), np.float32), dev.asarray(np.zeros(3, np.int64)))
    with pytest.raises(InvalidArgumentError, match="grad must be True or False"):
        ce(bx, bt, grad=1)


def test_a_captured_graph_replays_with_fresh_logits(dev, rng):
    """The whole call (count, rows with the gradient in place, the mean) replays from the graph;
    the host check is skipped while capturing (a NaN row instead)."""
    shape = (9, 777)
    x, t = _data(rng, shape, "float32")
    bx, bt = dev.asarray(x), dev.asarray(t)
    with dev.capture() as graph:
        loss, g = ce(bx, bt, label_smoothing=0.1, grad=True, grad_out=bx)
    try:
        for _ in range(3):
            x, t = _data(rng, shape, "float32")
            bx.copy_from(x)
            bt.copy_from(t)
            graph.launch()
            want, want_g = ce64(x, t, label_smoothing=0.1)
            assert _err(loss.to_numpy(), want) <= TOL["float32"]
            assert _err(bx.to_numpy(), want_g) <= TOL["float32"]
    finally:
        graph.close()


# ---- fused_linear_cross_entropy ---------------------------------------------------------------
def flce64(h, w, t, b=None, **kw):
    h64, w64 = h.astype(np.float64), w.astype(np.float64)
    logits = h64 @ w64.T + (0 if b is None else b.astype(np.float64))
    loss, g = ce64(logits, t, **kw)
    return loss, g @ w64, g.T @ h64, None if b is None else g.sum(axis=0)


def _fused_data(rng, m, n, k, dtype, bias):
    dt = _np_dtype(dtype)
    h = (rng.standard_normal((m, k)) / np.sqrt(k)).astype(dt)
    w = rng.standard_normal((n, k)).astype(dt)
    b = rng.standard_normal(n).astype(dt) if bias else None
    t = rng.integers(0, n, size=m).astype(np.int64)
    t[rng.random(m) < 0.2] = -100
    return h, w, b, t


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fused_linear_matches_float64_at_every_chunking(dev, rng, dtype):
    _need(dev, dtype)
    m, n, k = 37, 203, 40
    item = _np_dtype(dtype).itemsize
    for i, (chunk_rows, bias, reduction) in enumerate([(1, False, "mean"), (8, True, "sum"), (16, False, "none"),
                                                       (None, True, "mean")]):
        h, w, b, t = _fused_data(rng, m, n, k, dtype, bias)
        kw = dict(reduction=reduction, label_smoothing=0.1 * (i % 2), z_loss=1e-4 * (i % 3))
        want = flce64(h, w, t, b, **kw)
        args = [dev.asarray(h), dev.asarray(w), dev.asarray(t), None if b is None else dev.asarray(b)]
        limit = None if chunk_rows is None else chunk_rows * n * item
        outs = dict(grad_hidden=dev.asarray(np.full(h.shape, np.nan, h.dtype)),
                    grad_weight=dev.asarray(np.full(w.shape, np.nan, w.dtype)),
                    out=dev.asarray(np.full(want[0].shape, np.nan, h.dtype)))
        if bias:
            outs["grad_bias"] = dev.asarray(np.full(b.shape, np.nan, b.dtype))
        got = flce(*args, grad=True, max_chunk_bytes=limit, **kw, **outs)
        assert got[0] is outs["out"] and got[1] is outs["grad_hidden"] and got[2] is outs["grad_weight"]
        tol = TOL[dtype] * (4 if dtype != "float32" else 1)  # the logits and dlogits rounded to the dtype
        for what, g, r in zip(("loss", "grad_hidden", "grad_weight", "grad_bias"), got, want):
            if r is None:
                assert g is None
                continue
            assert _err(g.to_numpy(), r) <= tol, (chunk_rows, what)
        loss = flce(*args, max_chunk_bytes=limit, **kw)
        assert _err(loss.to_numpy(), want[0]) <= tol, (chunk_rows, "loss alone")


def test_fused_linear_in_a_captured_graph(dev, rng):
    m, n, k = 20, 65, 16
    h, w, b, t = _fused_data(rng, m, n, k, "float32", False)
    bh, bw, bt = dev.asarray(h), dev.asarray(w), dev.asarray(t)
    with dev.capture() as graph:
        loss, gh, gw, gb = flce(bh, bw, bt, grad=True, max_chunk_bytes=6 * n * 4)
    assert gb is None
    try:
        for _ in range(2):
            h, w, b, t = _fused_data(rng, m, n, k, "float32", False)
            bh.copy_from(h)
            bw.copy_from(w)
            bt.copy_from(t)
            graph.launch()
            for g, r in zip((loss, gh, gw), flce64(h, w, t)):
                assert _err(g.to_numpy(), r) <= TOL["float32"]
    finally:
        graph.close()


def test_fused_linear_bad_arguments(dev, rng):
    h, w, b, t = _fused_data(rng, 5, 9, 4, "float32", True)
    bh, bw, bb, bt = dev.asarray(h), dev.asarray(w), dev.asarray(b), dev.asarray(t)
    with pytest.raises(InvalidArgumentError, match=r"weight must be \(V, 4\)"):
        flce(bh, dev.asarray(w[:, :3].copy()), bt)
    with pytest.raises(InvalidArgumentError, match=r"bias has shape \(8,\); it must be \(9,\)"):
        flce(bh, bw, bt, bias=dev.asarray(b[:8].copy()))
    with pytest.raises(InvalidArgumentError, match=r"targets have shape \(4,\)"):
        flce(bh, bw, dev.asarray(t[:4].copy()))
    with pytest.raises(InvalidArgumentError, match="max_chunk_bytes=0"):
        flce(bh, bw, bt, max_chunk_bytes=0)
    with pytest.raises(InvalidArgumentError, match="weight has dtype float64"):
        flce(bh, dev.asarray(w.astype(np.float64)), bt)
    with pytest.raises(InvalidArgumentError, match="grad_hidden is given but grad=False"):
        flce(bh, bw, bt, grad_hidden=dev.empty(h.shape, np.float32))
    with pytest.raises(InvalidArgumentError, match="grad_bias is given but there is no bias"):
        flce(bh, bw, bt, grad=True, grad_bias=dev.empty((9,), np.float32))
    with pytest.raises(InvalidArgumentError, match="grad_weight shares memory with weight"):
        flce(bh, bw, bt, grad=True, grad_weight=bw)
    with pytest.raises(InvalidArgumentError, match="reduction='max'"):
        flce(bh, bw, bt, reduction="max")
    t2 = t.copy()
    t2[0] = 9
    with pytest.raises(InvalidArgumentError, match=r"out of range.*\[0, 9\)"):
        flce(bh, bw, dev.asarray(t2))
    assert FUSED.name == "fused_linear_cross_entropy"
