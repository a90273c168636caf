"""argmax, top_k and sample: over the last dimension of logits (rows of vocabulary width), one
kernel file (sampling.cl).

Order: torch's. Values compare as floats with NaN the largest and -0 equal to +0; among equal
values the lower index comes first; top_k's values come sorted, largest first. Indices are int32
(a vocabulary is far below 2^31; half the bytes of int64, and what ``embedding`` and Java's
``int`` take).

Wide rows and few of them (decode: 1-64 rows of 128256) are split over SPLIT work-groups per row,
each reducing (argmax) or selecting (top-k: a radix select on the values' order keys) its chunk;
a second launch merges a row's SPLIT partial results. Many rows run a row per work-group.

``sample`` draws one token per row on the device from Philox4x32-10 (counter-based: the token is
a function of (logits, seed, offset, row), the same on every device and backend up to the
rounding of the sums at a boundary of the cumulative distribution), after Hugging Face's
temperature, top-k and top-p (nucleus) filtering.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable, sample as _sample_array

_DTYPES = ("float32", "float16", "bfloat16")
_SPLITS = (1, 2, 4, 8, 16, 32, 64)
K_MAX = 1024  # the largest k top_k takes (and the candidates of top-p sampling without top_k)
_INT32 = lookup("int32")
_INT64 = lookup("int64")
SIZES = Sizes(gpu={"rows": 64, "cols": 128256}, cpu={"rows": 64, "cols": 128256},
              quick={"rows": 8, "cols": 32000}, tiny={"rows": 1, "cols": 1000},
              odd=({"rows": 1, "cols": 7}, {"rows": 13, "cols": 4097}, {"rows": 3, "cols": 1}))


def rule(buckets: dict, device, dt, params: dict | None = None) -> dict:
    """A row per work-group when there are enough rows to fill the device; else each row split
    into chunks of at least 4096 columns, up to 4 groups per compute unit in all."""
    rows, cols = buckets["rows"], buckets["cols"]
    cu = max(1, device.compute_units or 1)
    want = max(1, 4 * cu // rows) if device.kind != "cpu" else max(1, cu // rows)
    split = 1
    while split * 2 <= min(want, 64) and cols // (split * 2) >= 4096:
        split *= 2
    return {"SPLIT": split}


# LAYOUT 0 (GPUs): a group's items stride over its chunk, top-k by a radix select in local memory;
# 1 (CPUs: OpenCL C vectors): argmax's items each a contiguous run in 16-wide vectors, top-k by the
# group's first item keeping a heap of the k best (16 keys at a time compared with its worst)
_TUNABLES = (Tunable("WG", (32, 64, 128, 256, 512, 1024), 256), Tunable("SPLIT", _SPLITS, 1),
             Tunable("LAYOUT", (0, 1), 0))
_RESTRICTIONS = ("WG <= max_work_group_size", f"4 * (256 + WG + 8) + 8 * {K_MAX} + 16 * WG <= local_mem_size",
                 "LAYOUT == 0 or is_cpu")


def _spec(kind: type, name: str, entries: tuple, **fields) -> OpSpec:
    return kind(name=name, source="sampling.cl", entries=entries, dtypes=_DTYPES, tunables=_TUNABLES,
                  problem=("rows", "cols"), restrictions=_RESTRICTIONS, rule=rule,
                  # PoCL 3.1 on the 2-core Xeon: WG 16, 64 and 256 ran argmax within 10% of each other at 1 and 64
                  # rows of 128256 (a busy machine); 64 keeps top-k's per-step barriers few
                  cpu_defaults=(("WG", 64), ("LAYOUT", 1)), sizes=SIZES,
                  moved=lambda p, size: p["rows"] * p["cols"] * size, **fields)


def _kmax(k: int) -> int:
    """The KMAX a top-k of ``k`` builds with: two builds per config (local memory for 64 or for
    1024 candidates; a GPU keeps more groups resident with the small one)."""
    return 64 if k <= 64 else K_MAX


# ---- argument checks ------------------------------------------------------------------------
def _rows(op: str, x) -> tuple:
    """(x checked, its dtype, rows, cols, the leading shape)."""
    x = checks.buffer(op, "x" if op != "sample" else "logits", x)
    dt = x._dt or checks.dtype(x)
    what = "x" if op != "sample" else "logits"
    if len(x.shape) == 0:
        raise InvalidArgumentError(f"{op}: {what} must have at least one dimension (the rows' last), got a scalar")
    cols = x.shape[-1]
    if cols == 0:
        raise InvalidArgumentError(f"{op}: {what} has rows of length 0 (shape {x.shape}); {op} needs at least one "
                                   f"column")
    rows = math.prod(x.shape[:-1])
    return x, dt, rows, cols, x.shape[:-1]


def _integer(op: str, name: str, value, low: int, high: int, hint: str = "") -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"{op}: {name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise InvalidArgumentError(f"{op}: {name} = {value} is out of range [{low}, {high}]{hint}")
    return value


def _real(op: str, name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InvalidArgumentError(f"{op}: {name} must be a finite real number, got {value!r}")
    return float(value)


def _index_out(op: str, out, x: Buffer, shape: tuple, name: str = "out") -> Buffer:
    """An int32 result of ``shape`` on x's device: ``out`` checked, or a new buffer."""
    nbytes = 4 * math.prod(shape)
    if out is None:
        return Buffer._allocate(x.device, shape, _INT32, nbytes)
    out = checks.buffer(op, name, out)
    if out.device is not x.device:
        raise InvalidArgumentError(f"{op}: {name} lives on {out.device.id}, the input on {x.device.id}; "
                                   f"copy it with .to({x.device.id!r})")
    if out._dt is not _INT32:
        raise InvalidArgumentError(f"{op}: {name} has dtype {out.dtype}; the indices are int32")
    if out.shape != shape:
        raise InvalidArgumentError(f"{op}: {name} has shape {out.shape}, the result has shape {shape}")
    checks.disjoint(op, out, name, x=x)
    return out


# ---- argmax ---------------------------------------------------------------------------------
def _argmax_steps(dev, dt, rows: int, cols: int) -> tuple:
    params, kernels = resolve(ARGMAX, dev, dt, {"rows": max(rows, 1), "cols": cols}, (("KMAX", 64),))
    wg, split = params["WG"], params["SPLIT"]
    return (kernels["argmax_partial"], (rows * split * wg,), (wg,), kernels["argmax_final"],
            (-(-rows // wg) * wg,), (wg,), split, np.int32(rows), np.int32(cols))


def _argmax_launch(dev, dt, x: Buffer, rows: int, cols: int, out: Buffer) -> None:
    k1, g1, l1, k2, g2, l2, split, r, c = plan(ARGMAX, (dev, dt.name, rows, cols),
                                               lambda: _argmax_steps(dev, dt, rows, cols))
    if split > 1:
        part = dev._temporary(8 * rows * split)
        dev.launch(k1, g1, l1, [r, c, x, part, None])
        dev.launch(k2, g2, l2, [r, part, out])
    else:
        dev.launch(k1, g1, l1, [r, c, x, None, out])


def argmax(x: Buffer, out: Buffer | None = None) -> Buffer:
    """The index of the largest value of each row (the last dimension), as an int32 Buffer of
    x's leading shape (``out`` to reuse one). As torch: NaN is the largest value, ties go to the
    lowest index.

    >>> ids = isthmus.ops.argmax(logits)         # (batch,) int32, greedy decoding
    """
    x, dt, rows, cols, lead = _rows("argmax", x)
    ARGMAX.check_dtype(x.device, dt)
    out = _index_out("argmax", out, x, lead)
    if rows:
        _argmax_launch(x.device, dt, x, rows, cols, out)
    return out


# ---- top_k ----------------------------------------------------------------------------------
def _topk_steps(spec: OpSpec, dev, dt, rows: int, cols: int, k: int) -> tuple:
    params, kernels = resolve(spec, dev, dt, {"rows": max(rows, 1), "cols": cols}, (("KMAX", _kmax(k)),))
    wg, split = params["WG"], params["SPLIT"]
    ws_words = (2 * rows * split * k if split > 1 else 0) + 2 * rows * k
    return (kernels["topk_chunk"], (rows * split * wg,), (wg,), kernels["topk_merge"], (rows * wg,), (wg,), split,
            np.int32(rows), np.int32(cols), np.int32(k), 4 * ws_words, params)


def _topk_launch(spec: OpSpec, dev, dt, x: Buffer, rows: int, cols: int, k: int, values, indices, final: bool):
    """The top-k launches; returns (workspace, word offset of the candidates in it)."""
    c1, g1, l1, c2, g2, l2, split, r, c, kk, ws_nbytes, _ = plan(
        spec, (dev, dt.name, rows, cols, k), lambda: _topk_steps(spec, dev, dt, rows, cols, k))
    ws = dev._temporary(max(4, ws_nbytes))
    f = np.int32(final)
    dev.launch(c1, g1, l1, [r, c, kk, f, x, ws, values, indices])
    if split > 1:
        dev.launch(c2, g2, l2, [r, c, kk, f, x, ws, values, indices])
    return ws, np.int64(2 * rows * split * k if split > 1 else 0)


def top_k(x: Buffer, k: int, out: tuple[Buffer, Buffer] | None = None) -> tuple[Buffer, Buffer]:
    """The ``k`` largest values of each row (the last dimension) and their indices, as
    ``(values, indices)``: Buffers of shape ``x.shape[:-1] + (k,)``, values in x's dtype sorted
    largest first, indices int32 (``out=(values, indices)`` to reuse two). As torch.topk: NaN is
    the largest value, ties go to the lowest index. 1 <= k <= min(row width, 1024).

    >>> values, ids = isthmus.ops.top_k(logits, 50)
    """
    x, dt, rows, cols, lead = _rows("top_k", x)
    TOP_K.check_dtype(x.device, dt)
    k = _integer("top_k", "k", k, 1, min(cols, K_MAX),
                 f" (the row width is {cols}; top_k takes k up to {K_MAX})" if k is not None else "")
    shape = (*lead, k)
    if out is None:
        values = Buffer._allocate(x.device, shape, dt, dt.np.itemsize * math.prod(shape))
        indices = Buffer._allocate(x.device, shape, _INT32, 4 * math.prod(shape))
    else:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise InvalidArgumentError(f"top_k: out must be a pair (values, indices) of Buffers, got "
                                       f"{type(out).__name__}")
        values = checks.buffer("top_k", "out[0] (values)", out[0])
        checks.like("top_k", x, "out[0] (values)", values)
        if values.shape != shape:
            raise InvalidArgumentError(f"top_k: out[0] (values) has shape {values.shape}, the values have shape "
                                       f"{shape}")
        checks.disjoint("top_k", values, "out[0] (values)", x=x)
        indices = _index_out("top_k", out[1], x, shape, "out[1] (indices)")
        checks.disjoint("top_k", indices, "out[1] (indices)", values=values)
    if rows:
        _topk_launch(TOP_K, x.device, dt, x, rows, cols, k, values, indices, True)
    return values, indices


# ---- sample ---------------------------------------------------------------------------------
def _sample_steps(dev, dt, rows: int, cols: int) -> tuple:
    params, kernels = resolve(SAMPLE, dev, dt, {"rows": max(rows, 1), "cols": cols}, (("KMAX", 64),))
    wg = params["WG"]
    return kernels["sample_rows"], (rows * wg,), (wg,), np.int32(rows), np.int32(cols)


def sample(logits: Buffer, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
           offsets: int | Buffer = 0, out: Buffer | None = None) -> Buffer:
    """One token per row of ``logits`` (the last dimension), drawn on the device, as an int32
    Buffer of the leading shape (``out`` to reuse one).

    The draw: Philox4x32-10 keyed by ``seed`` (0 <= seed < 2**64) at counter (offset, row), where
    ``offsets`` is one integer for all rows or an int64 Buffer of one per row: the same seed and
    offsets give the same tokens on every device and backend (advance the offset at each step).
    The distribution: Hugging Face's: ``logits / temperature``, then the ``top_k`` largest kept
    (0: all; exactly top_k, ties to the lowest index), then the nucleus: the most likely tokens
    whose preceding probability mass is below ``top_p`` (at least one), then softmax over what is
    kept. ``temperature = 0``: greedy (``argmax``; top_k and top_p do not apply). Without top_k,
    top_p < 1 takes its nucleus among the 1024 most likely tokens. A row holding NaN or +inf
    gives its argmax.

    In a captured graph, ``graph.bind_all("seed", s)``, ``"offset"`` (an integer ``offsets``) or
    ``"offsets"`` (a Buffer), ``"temperature"`` (> 0 stays sampling, 0 greedy) and ``"top_p"``
    (when the call had top_p < 1) change per replay without capturing again.

    >>> ids = isthmus.ops.sample(logits, temperature=0.7, top_p=0.9, seed=1234, offsets=step)
    """
    x, dt, rows, cols, lead = _rows("sample", logits)
    SAMPLE.check_dtype(x.device, dt)
    temperature = _real("sample", "temperature", temperature)
    if temperature < 0:
        raise InvalidArgumentError(f"sample: temperature = {temperature} must be >= 0 (0: greedy)")
    top_k = _integer("sample", "top_k", top_k, 0, 1 << 31, "")
    if top_k > min(cols, K_MAX) and top_k > K_MAX:
        raise InvalidArgumentError(f"sample: top_k = {top_k}; sample takes top_k up to {K_MAX} (0: no top-k "
                                   f"filter)")
    top_p = _real("sample", "top_p", top_p)
    if not 0 < top_p <= 1:
        raise InvalidArgumentError(f"sample: top_p = {top_p} must be in (0, 1] (1: no nucleus filter)")
    seed = _integer("sample", "seed", seed, 0, (1 << 64) - 1)
    dev = x.device
    if isinstance(offsets, Buffer):
        offsets = checks.buffer("sample", "offsets", offsets)
        if offsets.device is not dev:
            raise InvalidArgumentError(f"sample: offsets lives on {offsets.device.id}, logits on {dev.id}; copy it "
                                       f"with .to({dev.id!r})")
        if offsets._dt is not _INT64:
            raise InvalidArgumentError(f"sample: offsets has dtype {offsets.dtype}; it must be int64 (one counter "
                                       f"per row)")
        if offsets.size != rows or offsets.shape not in (lead, (rows,)):
            raise InvalidArgumentError(f"sample: offsets has shape {offsets.shape}; it must hold one per row: "
                                       f"{lead}")
        offset, per_row, offsets_buf = np.int64(0), np.int32(1), offsets
    else:
        offset = _integer("sample", "offsets", offsets, 0, (1 << 63) - 1,
                          " (or pass an int64 Buffer of one per row)")
        offset, per_row, offsets_buf = np.int64(offset), np.int32(0), None
    out = _index_out("sample", out, x, lead)
    if not rows:
        return out
    seed_arg = np.uint64(seed)
    kernel, g, loc, r, c = plan(SAMPLE, (dev, dt.name, rows, cols), lambda: _sample_steps(dev, dt, rows, cols))
    if temperature == 0 or (top_k == 0 and top_p == 1.0):
        kc, norm_all, ws, cand_at = 0, 0, None, np.int64(0)
    else:
        kc = min(cols, top_k if top_k > 0 else K_MAX)
        norm_all = int(top_k == 0)
        ws, cand_at = _topk_launch(SAMPLE, dev, dt, x, rows, cols, kc, None, None, False)
    dev.launch(kernel, g, loc, [r, c, np.int32(kc), np.int32(norm_all), np.float32(temperature), np.float32(top_p),
                                seed_arg, offset, per_row, offsets_buf, x, ws, cand_at, out])
    return out


# ---- references (NumPy float64; the same formulas on CuPy for the bench) -----------------------
def order_keys(xp, x):
    """The kernels' order keys (uint32, as int64) of x's values taken to float32."""
    f = xp.asarray(x).astype(xp.float32)
    u = f.view(xp.uint32).astype(xp.int64)
    keys = xp.where(u & 0x80000000, (~u) & 0xFFFFFFFF, u | 0x80000000)
    keys = xp.where(f == 0, 0x80000000, keys)
    return xp.where(xp.isnan(f), 0xFFFFFFFF, keys)


def _order(xp, x):
    """Each row's indices in the op's order (largest first, ties to the lowest index)."""
    return xp.argsort(-order_keys(xp, x), axis=-1, kind="stable")


def reference_argmax(xp, x):
    return xp.argmax(order_keys(xp, x), axis=-1).astype(xp.int32)


def reference_top_k(xp, x, k):
    idx = _order(xp, x)[..., :k]
    return xp.take_along_axis(x, idx, axis=-1), idx.astype(xp.int32)


_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def philox4x32(counter, key, rounds: int = 10):
    """Philox4x32-``rounds`` of NumPy uint64 arrays holding 32-bit words: counter (4, n), key (2, n)."""
    mask = np.uint64(0xFFFFFFFF)
    c = [np.asarray(w, np.uint64) & mask for w in counter]
    k0, k1 = (np.asarray(w, np.uint64) & mask for w in key)
    for _ in range(rounds):
        p0, p1 = np.uint64(_PHILOX_M[0]) * c[0], np.uint64(_PHILOX_M[1]) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & mask]
        k0, k1 = (k0 + np.uint64(_PHILOX_W[0])) & mask, (k1 + np.uint64(_PHILOX_W[1])) & mask
    return c


def uniforms(rows: int, seed: int, offsets) -> np.ndarray:
    """The u in [0, 1) of each row: Philox's first word at counter (offset, row, 0), as (w >> 8) / 2**24."""
    off = np.broadcast_to(np.asarray(offsets, np.int64).reshape(-1).view(np.uint64), (rows,))
    row = np.arange(rows, dtype=np.uint64)
    w = philox4x32((off, off >> np.uint64(32), row, np.zeros(rows, np.uint64)),
                   (np.full(rows, seed & 0xFFFFFFFF, np.uint64), np.full(rows, seed >> 32, np.uint64)))[0]
    return (w >> np.uint64(8)).astype(np.float64) / 16777216.0


def rounding_slack(cols: int) -> float:
    """A first-order bound on the kernel's float32 error in a running sum of a row's probabilities,
    relative to the sum's total: each work-item sums a segment of at most ceil(cols / 32) terms
    (WG >= 32), the segments' sums (at most WG <= 1024 of them, no more than cols not empty) are
    added in order, a candidates' sum has up to 1024 terms, and each term's exp carries the rounding
    of x / temperature and exp's own (64 units for |x / temperature - max| up to about 60)."""
    return 2.0 ** -24 * (-(-cols // 32) + 2 * min(cols, 1024) + 64)


def _position(e, z, u: float, top_p: float, d: float = 0.0) -> int:
    """The position among a row's candidates (weights ``e``, in their order) that the inverse CDF
    at ``u`` draws: after the nucleus cut at ``top_p`` of the row's total weight ``z`` (None: no
    cut; the candidates whose preceding weight is below it, at least one), the first candidate whose
    running sum passes ``u`` of the kept ones' total. ``d`` moves the draw's target and the cut by
    ``d`` of their totals (0: the reference's arithmetic exactly); the position never decreases
    with ``d``."""
    keep = e.size
    if z is not None:
        before = np.concatenate(([0.0], np.cumsum(e)[:-1]))
        keep = max(1, int((before < (top_p + d) * z).sum()))
    cdf = np.cumsum(e[:keep])
    return min(int(np.searchsorted(cdf, (u + d) * cdf[-1], side="right")), keep - 1)


def _draws(logits, temperature=1.0, top_k=0, top_p=1.0, seed=0, offsets=0, slack: float = 0.0) -> tuple:
    """(the rows' leading shape, each row's tokens): in float64, Hugging Face's filtering then the
    inverse CDF at the row's Philox uniform; the tokens from the draw with its target and the
    nucleus's top_p cut moved down by ``slack`` of their totals to the draw with both moved up by it
    (contiguous positions of the row's candidates: one token at slack 0, the reference's)."""
    x = logits.get() if hasattr(logits, "get") else np.asarray(logits)  # (CuPy's: to the host)
    cols = x.shape[-1]
    flat = x.reshape(-1, cols).astype(np.float64)
    greedy = reference_argmax(np, flat)
    if isinstance(offsets, np.ndarray) or hasattr(offsets, "to_numpy"):
        offsets = offsets.to_numpy() if hasattr(offsets, "to_numpy") else offsets
    u = uniforms(flat.shape[0], seed, offsets)
    order = _order(np, flat)
    tokens = []
    for r in range(flat.shape[0]):
        row = flat[r]
        if temperature == 0 or np.isnan(row).any() or np.isposinf(row).any() or np.isneginf(row).all():
            tokens.append(greedy[r:r + 1].astype(np.int32))
            continue
        s = row / temperature
        if top_k == 0 and top_p == 1.0:
            cand, e, z = np.arange(cols), np.exp(s - s.max()), None
        else:
            cand = order[r, :min(cols, top_k if top_k else K_MAX)]
            e = np.exp(s[cand] - s[cand[0]])
            z = e.sum() if top_k else np.exp(s - s[cand[0]]).sum()
        lo, hi = (_position(e, z, u[r], top_p, d) for d in ((-slack, slack) if slack else (0.0, 0.0)))
        tokens.append(cand[lo:hi + 1].astype(np.int32))
    return x.shape[:-1], tokens


def reference_sample(xp, logits, temperature=1.0, top_k=0, top_p=1.0, seed=0, offsets=0):
    """The token the kernel draws, in float64 (NumPy only: the draw is host arithmetic)."""
    lead, tokens = _draws(logits, temperature, top_k, top_p, seed, offsets)
    return xp.asarray(np.array([t[0] for t in tokens], np.int32).reshape(lead))


def admissible_samples(logits, temperature=1.0, top_k=0, top_p=1.0, seed=0, offsets=0) -> list[np.ndarray]:
    """Each row's tokens (int32 arrays) that the kernel may draw: the reference's, and where the
    row's draw (or the nucleus's top_p cut) lies within float32 rounding (:func:`rounding_slack`) of
    a boundary of the cumulative distribution, the neighbours across it (there the kernel's float32
    sums may fall on either side; elsewhere the token is exact)."""
    return _draws(logits, temperature, top_k, top_p, seed, offsets, rounding_slack(np.shape(logits)[-1]))[1]


def _inputs(p: dict, dt, rng):
    return (_sample_array(rng, (p["rows"], p["cols"]), dt),)


class _Indices(OpSpec):
    """argmax's and sample's spec: the reference's result is indices, never rounded to the input's
    dtype (``exact``: the reference on the inputs in float64, its int32 as it is)."""

    def sample_expect(self, *tensors, xp=np, exact: bool = False, **flags):
        return self.reference(xp, *tensors, **flags)


class _TopK(OpSpec):
    """top_k's spec: its sample calls (tests, tuner, bench) give the values (the indices are the
    op tests'), at k = 50 or the row width."""

    def sample_call(self, *tensors, out=None, **flags):
        x = tensors[0]
        k = min(SAMPLE_K, x.shape[-1])
        if out is None:
            return self.run(x, k)[0]
        return self.run(x, k, out=(out, Buffer._allocate(x.device, out.shape, _INT32, 4 * out.size)))[0]

    def sample_expect(self, *tensors, xp=np, exact: bool = False, **flags):
        x = tensors[0]
        return reference_top_k(xp, x, min(SAMPLE_K, x.shape[-1]))[0]


class _Sample(_Indices):
    """sample's spec: its sample calls (tests, tuner, bench) draw with top_p = 0.9, Llama's
    generation default: the top-k select of 1024 candidates, then sample_rows, so every kernel and
    tunable of the op runs (plain sampling is sample_rows alone, where SPLIT does nothing: a config
    tuned on it would pick SPLIT by noise for the calls that use it)."""

    def sample_call(self, *tensors, out=None, **flags):
        return super().sample_call(*tensors, out=out, **{"top_p": SAMPLE_TOP_P, **flags})

    def sample_expect(self, *tensors, xp=np, exact: bool = False, **flags):
        return super().sample_expect(*tensors, xp=xp, exact=exact, **{"top_p": SAMPLE_TOP_P, **flags})

    def result_error(self, got, ref, host=(), **flags) -> float:
        """A row whose token is not the reference's but one the kernel may draw there (the
        neighbour across a boundary of the distribution within float32 rounding of the row's draw
        or of the top_p cut: :func:`admissible_samples`) counts as matching; any other differs."""
        got, ref = np.asarray(got), np.asarray(ref)
        if len(host) and got.shape == ref.shape and got.size and not np.array_equal(got, ref):
            kw = {"top_p": SAMPLE_TOP_P, **flags}
            allowed = admissible_samples(*self._sample_args(host), **kw)
            flat = got.reshape(-1)
            ok = np.array([t in a for t, a in zip(flat, allowed)])
            got = np.where(ok, ref.reshape(-1), flat).reshape(got.shape)
        return super().result_error(got, ref, host, **flags)


SAMPLE_K = 50
SAMPLE_TOP_P = 0.9

ARGMAX = _spec(_Indices, "argmax", ("argmax_partial", "argmax_final"), run=argmax, reference=reference_argmax,
               inputs=_inputs, summary="index of the largest value of each row (int32)")
TOP_K = _spec(_TopK, "top_k", ("topk_chunk", "topk_merge"), run=top_k, reference=reference_top_k, inputs=_inputs,
              summary="the k largest values of each row, sorted, and their int32 indices")
SAMPLE = _spec(_Sample, "sample", ("topk_chunk", "topk_merge", "sample_rows"), run=sample, reference=reference_sample,
               inputs=_inputs, summary="one token per row drawn on the device (Philox), after temperature, "
                                       "top-k and top-p")
SPECS = (ARGMAX, TOP_K, SAMPLE)
