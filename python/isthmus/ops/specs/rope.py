"""rope: rotary position embedding, in place on q (and k in the same launch).

``x``: (tokens, heads, head_dim) or (batch, seq, heads, head_dim); ``positions``: int32/int64 of
shape ``x.shape[:-2]`` (any values, any order, repeats), or (seq,) for a 4-D x whose batch shares
them. Pair i of the first ``rotary_dim`` elements of each head turns by ``pos * inv_freq[i]``:
the half-split layout (Llama, NeoX, Hugging Face's ``rotate_half``: pairs (i, i + rotary_dim/2)) or
the interleaved one (GPT-J: pairs (2i, 2i+1)); the rest of each head stays as it is.

Frequencies: ``inv_freq = 1 / theta ** (2i / rotary_dim)``, rescaled by ``rope_scaling`` as Hugging
Face configs write it (``{"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
"original_max_position_embeddings"}``, ``{"rope_type": "linear", "factor"}``, the older key
``"type"``, or None), computed on the host in float64 and rounded to float32 once, into a small
table on the device made once per (device, frequencies). The angle is ``float32(pos) * inv_freq``
in float32, as Hugging Face computes it, so results match its within the dtype's tolerance.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...errors import InvalidArgumentError
from ...memo import BoundedMemo
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable

_POS = {"int32": "int", "int64": "long"}  # positions dtype -> POS (the kernel's type for them)
_LLAMA3 = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
# (device, frequencies) -> the device table (a Device._Scratch): a few hundred bytes each, kept for
# the next call (a model's every layer) and bounded, like every memo that grows with use
_tables = BoundedMemo(64)

SIZES = Sizes(gpu={"rows": 16384, "cols": 4096}, cpu={"rows": 1024, "cols": 4096},
              quick={"rows": 256, "cols": 1024}, tiny={"rows": 1, "cols": 4096},
              odd=({"rows": 1, "cols": 8}, {"rows": 3, "cols": 1000}, {"rows": 37, "cols": 4097}))


# ---- frequencies -------------------------------------------------------------------------------
def scaling_key(op: str, rope_scaling) -> tuple:
    """``rope_scaling`` checked: ("default",), ("linear", factor) or ("llama3", factor, low, high,
    original); an InvalidArgumentError naming the key that is missing or wrong."""
    if rope_scaling is None:
        return ("default",)
    if not isinstance(rope_scaling, Mapping):
        raise InvalidArgumentError(f"{op}: rope_scaling must be a dict as Hugging Face configs write it "
                                   f"({{'rope_type': 'llama3', ...}}) or None, got {type(rope_scaling).__name__}")
    kind = rope_scaling.get("rope_type", rope_scaling.get("type"))
    if kind is None:
        raise InvalidArgumentError(f"{op}: rope_scaling has no 'rope_type' (nor the older 'type') key; "
                                   f"give one of 'default', 'linear', 'llama3'")
    if kind == "default":
        return ("default",)
    if kind not in ("linear", "llama3"):
        raise InvalidArgumentError(f"{op}: rope_scaling['rope_type'] = {kind!r} is not supported; supported: "
                                   f"'default', 'linear', 'llama3'")
    values = []
    for name in ("factor",) if kind == "linear" else _LLAMA3:
        if name not in rope_scaling:
            raise InvalidArgumentError(f"{op}: rope_scaling of rope_type {kind!r} needs the key {name!r}")
        v = rope_scaling[name]
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(v) or v <= 0:
            raise InvalidArgumentError(f"{op}: rope_scaling[{name!r}] must be a positive number, got {v!r}")
        values.append(float(v))
    if kind == "llama3" and not values[1] < values[2]:
        raise InvalidArgumentError(f"{op}: rope_scaling['low_freq_factor'] ({values[1]}) must be less than "
                                   f"rope_scaling['high_freq_factor'] ({values[2]})")
    return (kind, *values)


_scalings = BoundedMemo(64)  # (each key's value and type, ...) of a rope_scaling dict -> scaling_key's tuple


def _scaling(rope_scaling) -> tuple:
    """scaling_key("rope", rope_scaling), remembered per content (a decode loop passes the same
    config each step: its checks cost more host time than the rest of the call)."""
    if rope_scaling is None:
        return ("default",)
    try:
        snap = tuple((k, v.__class__, v) for k, v in rope_scaling.items())
        found = _scalings.get(snap)
    except (AttributeError, TypeError):  # (not a mapping, or unhashable values: scaling_key says what is wrong)
        return scaling_key("rope", rope_scaling)
    if found is None:
        found = scaling_key("rope", rope_scaling)
        _scalings[snap] = found
    return found


def inv_freq(rotary_dim: int, theta: float, scaling: tuple) -> np.ndarray:
    """The rotary_dim/2 frequencies in float64, Hugging Face's formulas (``scaling``: scaling_key's)."""
    inv = 1.0 / theta ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    if scaling[0] == "linear":
        return inv / scaling[1]
    if scaling[0] == "llama3":
        factor, low, high, original = scaling[1:]
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > original / low, inv / factor, inv)
        smooth = (original / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < original / high) & ~(wavelen > original / low)
        return np.where(medium, smoothed, scaled)
    return inv


def _table(dev, rotary_dim: int, theta: float, scaling: tuple) -> tuple:
    """(holder, launch argument) of the float32 frequency table: made once per device and
    frequencies; while a graph records, memory the graph keeps (its replays may outlive the cache).
    The caller keeps the holder until its launch is queued (a table evicted meanwhile by another
    thread stays allocated)."""
    host = None
    rec = dev._recording()
    if rec is not None:
        host = inv_freq(rotary_dim, theta, scaling).astype(np.float32)
        buf = rec.temporary(dev, host.nbytes)
        dev.allocator.upload(buf._handle(), host)  # (a constant: uploaded now, not a recorded step)
        return buf, buf
    key = (dev, rotary_dim, theta, scaling)
    found = _tables.get(key)
    if found is None:
        from ...device import _Scratch

        host = inv_freq(rotary_dim, theta, scaling).astype(np.float32)
        found = _Scratch(dev, host.nbytes)
        dev.allocator.upload(found._mem, host)
        _tables[key] = found  # (two threads that both make one each launch their own; the last stays)
    return found, found.arg


# ---- the op ------------------------------------------------------------------------------------
def grid(tokens: int, heads: int, half: int, p: dict) -> tuple[tuple, tuple]:
    wg, pg = p["WG"], -(-half // p["VPT"])
    return (max(1, -(-tokens * pg // wg)) * wg, -(-heads // p["HPI"])), (wg, 1)


def _steps(dev, dt, tokens: int, npos: int, hq: int, hk: int, head_dim: int, half: int, pos_type: int,
           interleaved: bool) -> tuple:
    """(kernel, global, local, the launch's six int32 sizes, packed once per key)."""
    params, kernels = resolve(SPEC, dev, dt, {"rows": max(tokens, 1), "cols": max((hq + hk) * head_dim, 1)},
                              (("POS", pos_type), ("INTERLEAVED", int(interleaved))))
    return (kernels["rope"], *grid(tokens, hq + hk, half, params),
            tuple(np.int32(v) for v in (tokens, npos, hq, hk, head_dim, half)))


def _positions(x, positions) -> int:
    """How many positions there are (the tokens', or a 4-D x's sequence shared by its batch)."""
    lead = x.shape[:-2]
    if positions.shape == lead or (len(lead) == 2 and positions.shape == lead[1:]):
        return positions.size
    also = f" or (seq,) = {lead[1:]}" if len(lead) == 2 else ""
    raise InvalidArgumentError(f"rope: positions has shape {positions.shape}; it must be x.shape[:-2] = {lead}{also}")


def rope(x, positions, theta=10000.0, interleaved=False, rope_scaling=None, rotary_dim=None, k=None):
    """Rotary position embedding of ``x`` in place (and of ``k`` in the same launch: the q and k of
    one attention layer, each with its own number of heads); returns ``x``.

    x, k: (tokens, heads, head_dim) or (batch, seq, heads, head_dim), one dtype and head_dim;
    positions: int32/int64 buffer of shape x.shape[:-2] (or (seq,) for a batch sharing them);
    theta: the base; interleaved: GPT-J's pairs (2i, 2i+1) instead of Llama's (i, i + rotary_dim/2);
    rope_scaling: Hugging Face's config dict (llama3, linear) or None; rotary_dim: the rotated
    leading part of each head (even; default head_dim).

    >>> isthmus.ops.rope(q, positions, theta=500000.0, k=k, rope_scaling=config["rope_scaling"])
    """
    x = checks.buffer("rope", "x", x)
    positions = checks.buffer("rope", "positions", positions)
    dev, dt, shape = x.device, x._dt or checks.dtype(x), x.shape
    if len(shape) not in (3, 4):
        raise InvalidArgumentError(f"rope: x must be (tokens, heads, head_dim) or (batch, seq, heads, head_dim), "
                                   f"got shape {shape}")
    pos_type = _POS.get((positions._dt or checks.dtype(positions)).name)
    if pos_type is None:
        raise InvalidArgumentError(f"rope: positions must be int32 or int64, got {positions.dtype}")
    if positions.device is not dev:
        raise InvalidArgumentError(f"rope: positions live on {positions.device.id}, x on {dev.id}; copy them with "
                                   f".to({dev.id!r})")
    npos = _positions(x, positions)
    head_dim = shape[-1]
    if rotary_dim is None:
        if head_dim % 2:
            raise InvalidArgumentError(f"rope: x's head_dim (its last dimension) is {head_dim}, odd; rope turns pairs "
                                       f"of values: pass rotary_dim (an even number <= {head_dim}) to turn that many "
                                       f"and leave the rest as they are")
        rotary_dim = head_dim
    if isinstance(rotary_dim, bool) or not isinstance(rotary_dim, (int, np.integer)) or not (
            0 < rotary_dim <= head_dim and rotary_dim % 2 == 0):
        raise InvalidArgumentError(f"rope: rotary_dim must be an even integer in 2 .. head_dim = {head_dim}, "
                                   f"got {rotary_dim!r}")
    if interleaved is not False and interleaved is not True:
        interleaved = checks.flag("rope", "interleaved", interleaved)
    if theta.__class__ is not float or not 0 < theta < math.inf:  # (the common case: one test)
        if isinstance(theta, bool) or not isinstance(theta, (int, float, np.integer, np.floating)) \
                or not math.isfinite(theta) or theta <= 0:
            raise InvalidArgumentError(f"rope: theta must be a positive number, got {theta!r}")
    scaling = _scaling(rope_scaling)
    if k is not None:
        k = checks.buffer("rope", "k", k)
        checks.like("rope", x, "k", k)
        if len(k.shape) != len(shape) or k.shape[:-2] != shape[:-2] or k.shape[-1] != head_dim:
            raise InvalidArgumentError(f"rope: k has shape {k.shape}; it must be x's {shape} but for its number "
                                       f"of heads: ({', '.join(map(str, shape[:-2]))}, kv_heads, {head_dim})")
        checks.disjoint("rope", k, "k", x=x, positions=positions)
    checks.disjoint("rope", x, "x", positions=positions)
    tokens, hq, hk = math.prod(shape[:-2]), shape[-2], (0 if k is None else k.shape[-2])
    key = (dev, dt.name, shape, None if k is None else k.shape, npos, pos_type, interleaved, int(rotary_dim))
    kernel, g, loc, sizes = plan(SPEC, key, lambda: _steps(dev, dt, tokens, npos, hq, hk, head_dim,
                                                           int(rotary_dim) // 2, pos_type, interleaved))
    if tokens and hq + hk and head_dim:
        holder, table = _table(dev, int(rotary_dim), float(theta), scaling)
        dev.launch(kernel, g, loc, [*sizes, positions, table, x, x if k is None else k])
        del holder
    return x


def reference(xp, x, positions, theta=10000.0, interleaved=False, rope_scaling=None, rotary_dim=None, k=None):
    """x (and k) turned, as a new array (x's dtype; q and k concatenated along the heads when k is
    given): the kernel's computation (float32 angle, Hugging Face's order) in x's accumulator precision."""
    head_dim = x.shape[-1]
    rot = head_dim if rotary_dim is None else rotary_dim
    inv = xp.asarray(inv_freq(rot, float(theta), scaling_key("rope", rope_scaling)).astype(np.float32))
    lead = x.shape[:-2]
    pos = xp.broadcast_to(xp.asarray(positions), lead).astype(xp.float32)
    angle = (pos[..., None] * inv).astype(xp.float32)[..., None, :]  # (..., 1, half), rounded to float32
    acc = xp.float64 if x.dtype == xp.float64 else xp.float32
    c, s = xp.cos(angle.astype(acc)), xp.sin(angle.astype(acc))
    both = x if k is None else xp.concatenate([x, k], axis=-2)
    y = both.astype(acc)
    h = rot // 2
    i1, i2 = (slice(0, rot, 2), slice(1, rot, 2)) if interleaved else (slice(0, h), slice(h, rot))
    x1, x2 = y[..., i1].copy(), y[..., i2].copy()
    y[..., i1] = x1 * c - x2 * s
    y[..., i2] = x2 * c + x1 * s
    return y.astype(x.dtype)


def _heads(cols: int) -> tuple[int, int]:
    """(heads, head_dim) of a sample problem: heads of 64 covering cols (one head of cols rounded up
    to even below 128), so that heads * head_dim is in cols' bucket (the op's problem, a tuning key)."""
    return (-(-cols // 64), 64) if cols >= 128 else (1, max(2, cols + cols % 2))


def _inputs(p: dict, dt, rng):
    """(x, positions): _heads(cols) heads, positions up to 4095."""
    heads, head_dim = _heads(p["cols"])
    x = rng.standard_normal((p["rows"], heads, head_dim), dtype=np.float32).astype(dt)
    return x, rng.integers(0, 4096, p["rows"]).astype(np.int32)


# WG items per group over (token, pair group); VPT pairs per item (their cos and sin computed once
# for HPI heads); HPI heads per item along the grid's second dimension
SPEC = OpSpec(
    name="rope", source="rope.cl", entries=("rope",), dtypes=("float32", "float16", "bfloat16"),
    defines=(("POS", "int"), ("INTERLEAVED", 0)),
    tunables=(Tunable("WG", (16, 32, 64, 128, 256, 512), 128), Tunable("VPT", (1, 2, 4), 1),
              Tunable("HPI", (1, 2, 4, 8, 16, 32, 64), 4)),
    problem=("rows", "cols"), restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64), ("VPT", 1), ("HPI", 64)),
    run=rope, reference=reference, inputs=_inputs, sizes=SIZES, tolerance=8.0, in_place=(0,),
    moved=lambda p, size: 2 * p["rows"] * math.prod(_heads(p["cols"])) * size + 4 * p["rows"],
    summary="rotary position embedding in place (half-split or interleaved, partial, llama3/linear scaling)",
    doc=rope.__doc__)
