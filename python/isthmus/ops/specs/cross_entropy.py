"""cross_entropy and fused_linear_cross_entropy: softmax cross-entropy over rows of vocabulary width,
with the gradient of the logits written in the same pass (into the logits themselves when the caller
allows it), and the loss of ``hidden @ weight.T`` with the gradients of hidden and weight without the
full logits ever being materialized.

Semantics: torch.nn.functional.cross_entropy (``ignore_index``, ``label_smoothing``, ``reduction``
"mean" over the targets that are not ignored, "sum", "none"), plus the z-loss of PaLM and Liger Kernel
(``z_loss * lse**2`` added to each row's loss that is not ignored).

Launches (cross_entropy.cl): ``ce_count`` (one group: the targets counted, the ones out of range
counted), ``ce_rows`` (a work-group per row: one streaming read for the loss, online max and sum of
exp; with the gradient a second read and a write), ``ce_final`` (the row losses summed in a fixed
order: the same loss on every run). fused_linear_cross_entropy runs, per chunk of tokens, gemm
(``trans_b``), ``ce_rows`` with its gradient in place over the chunk's logits, then the gemms of the
gradients (``grad_weight`` accumulated with ``beta = 1``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError, UnsupportedDtypeError
from .. import checks
from ..resolve import plan, resolve
from ..spec import MNK, ROWS_COLS, OpSpec, Tunable, sample

_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}
_ROWS_MAX = 1 << 24  # rows whose count a float word holds exactly (the workspace's)
_TARGETS = {"int32": "int", "int64": "long"}
_DTYPES = ("float32", "float64", "float16", "bfloat16")
# ROWLOOP 0: a work-group of WG items per row, VPT loads in flight each (GPUs); 1 (CPUs): a row per
# work-item, WG rows per group, in OpenCL C vectors (VPT unused)
_TUNABLES = (Tunable("WG", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), 256), Tunable("ROWLOOP", (0, 1), 0),
             Tunable("VPT", (1, 2, 4, 8), 4, when=("ROWLOOP", (0,))))
_RESTRICTIONS = ("WG <= max_work_group_size", "3 * WG * acc_size + 8 <= local_mem_size", "ROWLOOP == 0 or is_cpu",
                 "WG >= 16 or ROWLOOP == 1", "ROWLOOP == 0 or WG <= 64")
# PoCL 3.1 on the 2-core Xeon here: a group of 16 items a row ran at 0.3-0.6x NumPy (one exp per element
# but scalar code); a row per item in vectors, a few rows a group (the rule), at NumPy's speed or better
# (benchmarks/results/runs/2026-12-04-losses-pocl/)
_CPU_DEFAULTS = (("ROWLOOP", 1), ("WG", 4))


def rule(buckets: dict, device, dt, params: dict) -> dict:
    """CPUs: a row per work-item in groups of about rows/8 (so that the cores each take several groups);
    GPUs: the defaults (a group of 256 per row)."""
    if device.kind != "cpu":
        return {}
    rows = buckets.get("rows", buckets.get("m", 1))
    return {"ROWLOOP": 1, "WG": max(1, min(16, rows // 8))}
_LOSS_SHAPE = (1,)
_COPY_GROUPS = 1024  # the copy kernels' groups at most (each grid-strides)


def _spec(name: str, problem: tuple) -> OpSpec:
    return OpSpec(name=name, source="cross_entropy.cl",
                  entries=("ce_count", "ce_rows", "ce_final", "ce_copy", "ce_bias_rows", "ce_colsum"),
                  dtypes=_DTYPES, tunables=_TUNABLES, problem=problem, restrictions=_RESTRICTIONS,
                  cpu_defaults=_CPU_DEFAULTS, rule=rule)


SPEC = _spec("cross_entropy", ("rows", "cols"))
FUSED = _spec("fused_linear_cross_entropy", ("m", "n", "k"))


# ---- the arguments ------------------------------------------------------------------------------
def _options(op: str, dt, ignore_index, label_smoothing, reduction, z_loss) -> tuple:
    if reduction.__class__ is not str or reduction not in _REDUCTIONS:
        raise InvalidArgumentError(f"{op}: reduction={reduction!r}; it must be 'mean', 'sum' or 'none'")
    ignore = checks.scalar(op, "ignore_index", ignore_index, "long")
    smoothing = checks.scalar(op, "label_smoothing", label_smoothing, dt.acc)
    if not 0.0 <= float(smoothing) <= 1.0:
        raise InvalidArgumentError(f"{op}: label_smoothing={label_smoothing!r}; it must be in [0, 1] (as torch's)")
    z = checks.scalar(op, "z_loss", z_loss, dt.acc)
    if not np.isfinite(float(z)):
        raise InvalidArgumentError(f"{op}: z_loss={z_loss!r}; it must be a finite number (0 for none)")
    return np.int64(ignore), _acc(dt)(smoothing), _acc(dt)(z), _REDUCTIONS[reduction]


def _acc(dt):
    return np.float64 if dt.acc == "double" else np.float32


def _targets(op: str, targets, dev, shape: tuple) -> str:
    """The targets' kernel type (int or long), after checking them against the rows ``shape``."""
    targets = checks.buffer(op, "targets", targets)
    if targets.device is not dev:
        raise InvalidArgumentError(f"{op}: targets live on {targets.device.id}, the logits on {dev.id}; "
                                   f"copy them with .to({dev.id!r})")
    ti = _TARGETS.get(targets.dtype.name)
    if ti is None:
        raise UnsupportedDtypeError(f"{op}: targets have dtype {targets.dtype}; they must be int32 or int64 "
                                    f"(class indices)")
    if targets.shape != shape:
        raise InvalidArgumentError(f"{op}: targets have shape {targets.shape}; they must have shape {shape} "
                                   f"(one class index per row)")
    return ti


def _loss_out(op: str, out, like: Buffer, shape: tuple) -> Buffer:
    if out is None:
        return Buffer._allocate(like.device, shape, like._dt, int(np.prod(shape, dtype=np.int64)) * like._dt.np.itemsize)
    return checks.output(op, out, like, shape)


def _check_targets(op: str, dev, ws_mem, acc, cols: int, ignore_index) -> None:
    """Raise when ce_count found targets out of range (one small read back: a synchronization)."""
    host = np.zeros(2, acc)
    dev._host_download(ws_mem, host)
    if host[1]:
        raise InvalidArgumentError(f"{op}: {int(host[1])} targets are out of range: each must be in [0, {cols}) or "
                                   f"ignore_index ({int(ignore_index)}); nothing was written")


def _launches(spec, dev, dt, problem: dict, ti: str, grad: bool) -> tuple:
    params, kernels = resolve(spec, dev, dt, problem, (("TI", ti), ("GRAD", int(grad))))
    return params["WG"], bool(params.get("ROWLOOP", 0)), kernels


def _rows_grid(rows: int, wg: int, rowloop: bool) -> tuple:
    """ce_rows's grid: a group per row, or (ROWLOOP) a row per item."""
    return ((-(-rows // wg) if rowloop else rows) * wg,), (wg,)


def _copy_grid(n: int, wg: int) -> tuple:
    return (max(1, min(_COPY_GROUPS, -(-n // wg))) * wg,), (wg,)


# ---- cross_entropy ------------------------------------------------------------------------------
def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean", grad=False,
                  z_loss=0.0, *, grad_out=None, check_targets=True, out=None) -> Any:
    """Softmax cross-entropy of each row of ``logits`` (``(..., C)``: rows of vocabulary width)
    against ``targets`` (int32/int64 class indices, shaped as the rows) as
    ``torch.nn.functional.cross_entropy``: rows whose target is ``ignore_index`` count for nothing,
    ``label_smoothing`` as torch defines it, ``reduction`` "mean" (over the rows not ignored; NaN
    when every row is), "sum" or "none" (a loss per row, shaped as ``targets``); plus ``z_loss *
    lse**2`` per row (PaLM's and Liger's z-loss; lse the row's log-sum-exp). Float16 and bfloat16
    logits are computed in float32.

    Returns the loss (a one-element Buffer of the logits' dtype, or one per row for "none"; into
    ``out`` when given). With ``grad=True`` returns ``(loss, grad)``: the gradient of the loss with
    respect to the logits, written in the same pass (the row's second read), into ``grad_out``
    when given; ``grad_out=logits`` writes it over the logits in place (as Liger does: no second
    buffer of the logits' size).

    ``check_targets`` (default): a target out of ``[0, C)`` that is not ``ignore_index`` raises
    InvalidArgumentError before anything is written, which reads one word back (a synchronization);
    inside ``dev.capture()``, or with ``check_targets=False``, such a row gets a NaN loss (and NaN
    gradient) instead. No target is ever read out of bounds.

    >>> loss, dlogits = isthmus.ops.cross_entropy(logits, targets, grad=True, grad_out=logits)
    """
    op = "cross_entropy"
    logits = checks.buffer(op, "logits", logits)
    dev, dt = logits.device, logits._dt or checks.dtype(logits)
    if len(logits.shape) < 1 or logits.shape[-1] == 0:
        raise InvalidArgumentError(f"{op}: logits have shape {logits.shape}; they must be (..., C) with C >= 1 "
                                   f"classes in the last dimension")
    cols = logits.shape[-1]
    row_shape = logits.shape[:-1]
    rows = int(np.prod(row_shape, dtype=np.int64))
    SPEC.check_dtype(dev, dt)
    ti = _targets(op, targets, dev, row_shape)
    grad = checks.flag(op, "grad", grad)
    check = checks.flag(op, "check_targets", check_targets)
    ignore, smoothing, z, red = _options(op, dt, ignore_index, label_smoothing, reduction, z_loss)
    if rows >= _ROWS_MAX:
        raise InvalidArgumentError(f"{op}: {rows} rows; at most {_ROWS_MAX - 1} in one call (split the batch)")
    if cols >= 2**31 - 1024:
        raise InvalidArgumentError(f"{op}: {cols} classes; at most {2**31 - 1025}")
    if grad_out is not None:
        if not grad:
            raise InvalidArgumentError(f"{op}: grad_out is given but grad=False; pass grad=True to write the "
                                       f"gradient")
        grad_out = checks.buffer(op, "grad_out", grad_out)
        checks.like(op, logits, "grad_out", grad_out)
        if grad_out.shape != logits.shape:
            raise InvalidArgumentError(f"{op}: grad_out has shape {grad_out.shape}; it must have the logits' shape "
                                       f"{logits.shape}")
        if grad_out is not logits:
            checks.in_place(op, grad_out, "logits", logits, "grad_out")  # (all of logits or none of it)
        checks.disjoint(op, grad_out, "grad_out", targets=targets)
    loss_shape = row_shape if red == 0 else _LOSS_SHAPE
    if out is not None:
        out = checks.buffer(op, "out", out)
        checks.disjoint(op, out, logits=logits, targets=targets, grad_out=grad_out)
    wg, rowloop, kernels = plan(SPEC, (dev, dt.name, rows, cols, ti, grad),
                       lambda: _launches(SPEC, dev, dt, {"rows": max(rows, 1), "cols": cols}, ti, grad))
    acc = _acc(dt)
    ws_nbytes = (2 + max(rows, 1)) * np.dtype(acc).itemsize
    checking = check and dev._recording() is None
    if checking:
        scratch = dev._scratch(ws_nbytes)
        ws = scratch.arg
    else:
        ws = dev._temporary(ws_nbytes)
    n_rows, n_cols = np.int32(rows), np.int32(cols)
    dev.launch(kernels["ce_count"], (wg,), (wg,), [n_rows, n_cols, targets, ignore, ws])
    if checking and rows:
        _check_targets(op, dev, scratch._mem, acc, cols, ignore)
    loss = _loss_out(op, out, logits, loss_shape)
    g = None
    if grad:
        g = grad_out if grad_out is not None else Buffer._allocate(dev, logits.shape, dt, logits.nbytes)
    if rows:
        dev.launch(kernels["ce_rows"], *_rows_grid(rows, wg, rowloop),
                   [n_rows, n_cols, np.int32(0), logits, targets, ignore, smoothing, z, np.int32(red == 2), ws,
                    g if grad else logits])
    _final(dev, kernels, wg, rows, red, ws, loss)
    return (loss, g) if grad else loss


def _final(dev, kernels, wg: int, rows: int, red: int, ws, loss: Buffer) -> None:
    if red == 0 and not rows:
        return
    groups = max(1, min(_COPY_GROUPS, -(-rows // wg))) if red == 0 else 1
    dev.launch(kernels["ce_final"], (groups * wg,), (wg,), [np.int32(rows), np.int32(red), ws, loss])


# ---- fused_linear_cross_entropy -----------------------------------------------------------------
def _chunk_rows(rows: int, vocab: int, hidden_nbytes: int, itemsize: int, max_chunk_bytes) -> int:
    if max_chunk_bytes is None:  # as large as the hidden states, at least 64 MiB (Liger's size, give or take)
        max_chunk_bytes = max(hidden_nbytes, 64 << 20)
    return max(1, min(rows, int(max_chunk_bytes) // (vocab * itemsize)))


def fused_linear_cross_entropy(hidden, weight, targets, bias=None, ignore_index=-100, reduction="mean", grad=False,
                               label_smoothing=0.0, z_loss=0.0, *, max_chunk_bytes=None, check_targets=True,
                               grad_hidden=None, grad_weight=None, grad_bias=None, out=None) -> Any:
    """The cross-entropy (:func:`cross_entropy`'s semantics) of the logits ``hidden @ weight.T (+ bias)``
    (hidden ``(tokens, H)``, weight ``(V, H)``, bias ``(V,)``, targets ``(tokens,)``), and with
    ``grad=True`` the gradients of hidden and weight (and bias), without the full ``(tokens, V)``
    logits ever existing: the tokens run in chunks whose logits take at most ``max_chunk_bytes``
    (default: the size of ``hidden``, at least 64 MiB); each chunk is one gemm, the loss and its
    gradient in place over the chunk's logits, then ``grad_hidden[chunk] = dlogits @ weight`` and
    ``grad_weight += dlogits.T @ hidden[chunk]``.

    Returns the loss (as :func:`cross_entropy`); with ``grad=True``
    ``(loss, grad_hidden, grad_weight, grad_bias)`` (``grad_bias`` None without a bias), into the
    buffers given as ``grad_hidden=``, ``grad_weight=``, ``grad_bias=`` when given. Extra device memory
    besides those: one chunk of logits, two chunks of hidden states, and a float per token.

    >>> loss, dh, dw, _ = isthmus.ops.fused_linear_cross_entropy(h, w, targets, grad=True)
    """
    op = "fused_linear_cross_entropy"
    hidden = checks.buffer(op, "hidden", hidden, ndim=2)
    weight = checks.buffer(op, "weight", weight, ndim=2)
    dev, dt = checks.same(op, hidden, weight=weight)
    FUSED.check_dtype(dev, dt)
    rows, h = hidden.shape
    vocab = weight.shape[0]
    if weight.shape[1] != h:
        raise InvalidArgumentError(f"{op}: hidden is {hidden.shape} and weight is {weight.shape}; weight must be "
                                   f"(V, {h}) (the logits are hidden @ weight.T)")
    if vocab == 0 or h == 0:
        raise InvalidArgumentError(f"{op}: weight is {weight.shape}; it needs at least one class and one feature")
    ti = _targets(op, targets, dev, (rows,))
    grad = checks.flag(op, "grad", grad)
    check = checks.flag(op, "check_targets", check_targets)
    ignore, smoothing, z, red = _options(op, dt, ignore_index, label_smoothing, reduction, z_loss)
    if rows >= _ROWS_MAX:
        raise InvalidArgumentError(f"{op}: {rows} tokens; at most {_ROWS_MAX - 1} in one call (split the batch)")
    if bias is not None:
        bias = checks.buffer(op, "bias", bias)
        checks.like(op, hidden, "bias", bias)
        if bias.shape != (vocab,):
            raise InvalidArgumentError(f"{op}: bias has shape {bias.shape}; it must be ({vocab},)")
    if max_chunk_bytes is not None and (isinstance(max_chunk_bytes, bool) or not isinstance(
            max_chunk_bytes, (int, np.integer)) or max_chunk_bytes <= 0):
        raise InvalidArgumentError(f"{op}: max_chunk_bytes={max_chunk_bytes!r}; it must be a positive integer "
                                   f"(bytes of logits one chunk may take)")
    given = {"grad_hidden": (grad_hidden, hidden.shape), "grad_weight": (grad_weight, weight.shape),
             "grad_bias": (grad_bias, (vocab,))}
    for name, (buf, shape) in given.items():
        if buf is None:
            continue
        if not grad:
            raise InvalidArgumentError(f"{op}: {name} is given but grad=False; pass grad=True to write the gradients")
        if name == "grad_bias" and bias is None:
            raise InvalidArgumentError(f"{op}: grad_bias is given but there is no bias")
        buf = checks.buffer(op, name, buf)
        checks.like(op, hidden, name, buf)
        if buf.shape != shape:
            raise InvalidArgumentError(f"{op}: {name} has shape {buf.shape}; it must be {shape}")
        checks.disjoint(op, buf, name, hidden=hidden, weight=weight, targets=targets, bias=bias)
    if out is not None:
        out = checks.buffer(op, "out", out)
        checks.disjoint(op, out, hidden=hidden, weight=weight, targets=targets, bias=bias, grad_hidden=grad_hidden,
                        grad_weight=grad_weight, grad_bias=grad_bias)
    from . import gemm as _gemm  # (the op library's gemm: its public run, checks included)

    gemm = _gemm.SPEC.run
    wg, rowloop, kernels = plan(FUSED, (dev, dt.name, rows, vocab, h, ti, grad),
                       lambda: _launches(FUSED, dev, dt, {"m": max(rows, 1), "n": vocab, "k": h}, ti, grad))
    acc = _acc(dt)
    item = dt.np.itemsize
    ws = Buffer._allocate(dev, (2 + max(rows, 1),), lookup(np.dtype(acc).name), (2 + max(rows, 1)) * np.dtype(acc).itemsize)
    own: list[Buffer] = [ws]
    try:
        dev.launch(kernels["ce_count"], (wg,), (wg,), [np.int32(rows), np.int32(vocab), targets, ignore, ws])
        if check and rows and dev._recording() is None:
            _check_targets(op, dev, ws._handle(), acc, vocab, ignore)
        loss = _loss_out(op, out, hidden, (rows,) if red == 0 else _LOSS_SHAPE)
        if grad:
            if grad_hidden is None:
                grad_hidden = Buffer._allocate(dev, hidden.shape, dt, hidden.nbytes)
            if grad_weight is None:
                grad_weight = Buffer._allocate(dev, weight.shape, dt, weight.nbytes)
            if bias is not None and grad_bias is None:
                grad_bias = Buffer._allocate(dev, (vocab,), dt, vocab * item)
        chunk = _chunk_rows(rows, vocab, hidden.nbytes, item, max_chunk_bytes)
        whole = chunk >= rows
        bufs: dict = {}
        for a in range(0, rows, chunk):
            n = min(chunk, rows - a)
            if bufs.get("n") != n:  # the chunk's buffers (the last chunk's smaller ones replace them)
                for b in bufs.get("own", ()):
                    b.close()
                    own.remove(b)
                made = {"n": n, "logits": Buffer._allocate(dev, (n, vocab), dt, n * vocab * item)}
                if not whole:
                    made["h"] = Buffer._allocate(dev, (n, h), dt, n * h * item)
                    if grad:
                        made["gh"] = Buffer._allocate(dev, (n, h), dt, n * h * item)
                made["own"] = [b for k, b in made.items() if k not in ("n", "own")]
                own += made["own"]
                bufs = made
            logits = bufs["logits"]
            if whole:
                hc = hidden
            else:
                hc = bufs["h"]
                dev.launch(kernels["ce_copy"], *_copy_grid(n * h, wg),
                           [np.int64(n * h), hidden, np.int64(a * h), hc, np.int64(0)])
            if bias is not None:
                dev.launch(kernels["ce_bias_rows"], *_copy_grid(n * vocab, wg), [np.int32(n), np.int32(vocab), bias,
                                                                                logits])
                gemm(hc, weight, logits, 1.0, 1.0, trans_b=True)
            else:
                gemm(hc, weight, logits, trans_b=True)
            dev.launch(kernels["ce_rows"], *_rows_grid(n, wg, rowloop),
                       [np.int32(n), np.int32(vocab), np.int32(a), logits, targets, ignore, smoothing, z,
                        np.int32(red == 2), ws, logits])
            if grad:
                first = a == 0
                if whole:
                    gemm(logits, weight, grad_hidden)
                else:
                    gemm(logits, weight, bufs["gh"])
                    dev.launch(kernels["ce_copy"], *_copy_grid(n * h, wg),
                               [np.int64(n * h), bufs["gh"], np.int64(0), grad_hidden, np.int64(a * h)])
                gemm(logits, hc, grad_weight, 1.0, 0.0 if first else 1.0, trans_a=True)
                if bias is not None:
                    dev.launch(kernels["ce_colsum"], *_copy_grid(vocab, wg),
                               [np.int32(n), np.int32(vocab), logits, grad_bias, np.int32(not first)])
        if grad and rows == 0:  # no token: zero gradients
            for b in (grad_hidden, grad_weight, grad_bias):
                if b is not None and b.nbytes:
                    dev._device_zero(b._handle(), b.nbytes)
        _final(dev, kernels, wg, rows, red, ws, loss)
    finally:
        for b in own:
            b.close()
    return (loss, grad_hidden, grad_weight, grad_bias) if grad else loss


# ---- references (NumPy/CuPy; float32 arithmetic, float64 for float64) ----------------------------
def reference(xp, logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean", grad=False,
              z_loss=0.0):
    """The loss (and with ``grad`` the gradient) as the kernels compute it."""
    dtype = logits.dtype
    acc = xp.float64 if dtype == xp.float64 else xp.float32
    x = logits.astype(acc).reshape(-1, logits.shape[-1])
    t = targets.reshape(-1).astype(xp.int64)
    c = x.shape[1]
    m = x.max(axis=1, keepdims=True)
    lse = (m + xp.log(xp.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    valid = t != ignore_index
    safe = xp.where(valid, t, 0)
    xt = xp.take_along_axis(x, safe[:, None], axis=1)[:, 0]
    eps = acc(label_smoothing)
    rows = lse - (1 - eps) * xt - eps / c * x.sum(axis=1) + acc(z_loss) * lse * lse
    rows = xp.where(valid, rows, 0)
    count = valid.sum()
    if reduction == "none":
        loss = rows.reshape(targets.shape)
    else:
        loss = rows.sum().reshape(1)
        if reduction == "mean":
            loss = loss / acc(count) if count else loss * acc(np.nan)
    loss = loss.astype(dtype)
    if not grad:
        return loss
    scale = acc(1) / acc(count) if reduction == "mean" else acc(1)
    p = xp.exp(x - lse[:, None])
    g = p * (1 + 2 * acc(z_loss) * lse[:, None]) - eps / c
    g[xp.arange(len(t)), safe] -= 1 - eps
    g = xp.where(valid[:, None], g * scale, 0)
    return loss, g.reshape(logits.shape).astype(dtype)


def reference_fused(xp, hidden, weight, targets, bias=None, ignore_index=-100, reduction="mean", grad=False,
                    label_smoothing=0.0, z_loss=0.0):
    acc = xp.float64 if hidden.dtype == xp.float64 else xp.float32
    logits = hidden.astype(acc) @ weight.astype(acc).T
    if bias is not None:
        logits = logits + bias.astype(acc)
    if not grad:
        return reference(xp, logits, targets, ignore_index, label_smoothing, reduction, False, z_loss).astype(
            hidden.dtype)
    loss, g = reference(xp, logits, targets, ignore_index, label_smoothing, reduction, True, z_loss)
    dt = hidden.dtype
    return (loss.astype(dt), (g @ weight.astype(acc)).astype(dt), (g.T @ hidden.astype(acc)).astype(dt),
            None if bias is None else g.sum(axis=0).astype(dt))


def _inputs(p: dict, dt, rng) -> tuple:
    rows, cols = p["rows"], p["cols"]
    t = rng.integers(0, cols, size=rows).astype(np.int64)
    t[rng.random(rows) < 0.1] = -100
    t[0] = rng.integers(0, cols)  # at least one row counts: a mean over no rows is NaN (as torch's)
    return sample(rng, (rows, cols), dt), t


def _inputs_fused(p: dict, dt, rng) -> tuple:
    m, n, k = p["m"], p["n"], p["k"]
    t = rng.integers(0, n, size=m).astype(np.int64)
    return (sample(rng, (m, k), dt) / np.sqrt(k)).astype(dt), sample(rng, (n, k), dt), t


SPEC = SPEC.completed(
    run=cross_entropy, reference=reference, inputs=_inputs, sizes=ROWS_COLS,
    moved=lambda p, size: p["rows"] * p["cols"] * size, tolerance=16.0,
    summary="softmax cross-entropy per row (torch's semantics, z-loss), its gradient in the same pass")
FUSED = FUSED.completed(
    run=fused_linear_cross_entropy, reference=reference_fused, inputs=_inputs_fused, sizes=MNK,
    moved=lambda p, size: (p["m"] * p["k"] + p["n"] * p["k"]) * size, flops=lambda p: 2 * p["m"] * p["n"] * p["k"],
    tolerance=16.0, summary="cross-entropy of hidden @ weight.T in chunks, with its gradients, no full logits")
SPECS = (SPEC, FUSED)
