"""merge_attention_states: two attention results over disjoint sets of keys (a shared prefix and a
sequence's own suffix: FlashInfer's cascade) merged into the result over their union, exactly, from
the outputs and their log-sum-exps (merge_attention_states.cl)."""
from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable, sample
from .attention import f32_output

SPEC = OpSpec(
    name="merge_attention_states", source="merge_attention_states.cl", entries=("merge_attention_states",),
    dtypes=("float32", "float16", "bfloat16"),
    tunables=(Tunable("WG", (32, 64, 128, 256), 256),),
    problem=("tokens", "heads", "head_dim"),
    restrictions=("WG <= max_work_group_size",),
    cpu_defaults=(("WG", 64),),
)


def merge_attention_states(o_a, lse_a, o_b, lse_b, out=None, lse_out=None) -> "tuple[Buffer, Buffer]":
    """The attention over the union of two disjoint key sets from each set's result: o_a, o_b
    ``(tokens, heads, head_dim)``, lse_a, lse_b float32 ``(tokens, heads)`` (natural log; -inf: the
    set is empty for that row). Returns ``(o, lse)``, new buffers or ``out``/``lse_out``.

    >>> o, lse = isthmus.ops.merge_attention_states(o_prefix, lse_prefix, o_suffix, lse_suffix)
    """
    op = "merge_attention_states"
    o_a = checks.buffer(op, "o_a", o_a, ndim=3)
    o_b = checks.buffer(op, "o_b", o_b, ndim=3)
    checks.like(op, o_a, "o_b", o_b)
    if o_a.shape != o_b.shape:
        raise InvalidArgumentError(f"{op}: o_a has shape {o_a.shape} and o_b {o_b.shape}; they must be the same")
    for name, x in (("lse_a", lse_a), ("lse_b", lse_b)):
        x = checks.buffer(op, name, x)
        if x.device is not o_a.device or x.dtype != "float32" or x.shape != o_a.shape[:2]:
            raise InvalidArgumentError(f"{op}: {name} must be float32 of shape (tokens, heads) = {o_a.shape[:2]} on "
                                       f"o_a's device, got {x.dtype} {x.shape}")
    dev, dt = o_a.device, o_a._dt or checks.dtype(o_a)
    tokens, heads, d = o_a.shape

    def steps():
        params, kernels = resolve(SPEC, dev, dt, {"tokens": max(tokens, 1), "heads": max(heads, 1),
                                                  "head_dim": max(d, 1)})
        wg = params["WG"]
        return kernels["merge_attention_states"], (max(1, -(-o_a.size // wg)) * wg,), (wg,)

    kern, g, loc = plan(SPEC, (dev, dt.name, o_a.shape), steps)
    o = checks.output(op, out, o_a, o_a.shape)
    lse = f32_output(op, "lse_out", lse_out, o_a, o_a.shape[:2])
    if out is not None:
        checks.disjoint(op, o, o_a=o_a, o_b=o_b)
    if lse_out is not None:
        checks.disjoint(op, lse, "lse_out", lse_a=lse_a, lse_b=lse_b)
    if o_a.size:
        dev.launch(kern, g, loc, [np.int64(o_a.size), d, o_a, lse_a, o_b, lse_b, o, lse])
    return o, lse


def reference(xp, o_a, lse_a, o_b, lse_b):
    """(o, lse) raveled and concatenated in o's dtype, as :func:`isthmus.ops.workloads.host_result` reads them."""
    acc = xp.float64 if o_a.dtype == xp.float64 else xp.float32
    la, lb = xp.asarray(lse_a).astype(acc)[..., None], xp.asarray(lse_b).astype(acc)[..., None]
    m = xp.maximum(la, lb)
    safe = xp.where(xp.isfinite(m), m, 0)
    wa, wb = xp.exp(la - safe), xp.exp(lb - safe)
    den = wa + wb
    o = (wa * o_a.astype(acc) + wb * o_b.astype(acc)) / xp.where(den > 0, den, 1)
    lse = xp.where(den > 0, m + xp.log(xp.where(den > 0, den, 1)), -xp.inf)
    return xp.concatenate([o.ravel(), lse.ravel()]).astype(o_a.dtype)


def _inputs(p, dt, rng):
    t, h, d = p["tokens"], p["heads"], p["head_dim"]
    lse = lambda: (rng.standard_normal((t, h)) * 3).astype(np.float32)  # noqa: E731
    return sample(rng, (t, h, d), dt), lse(), sample(rng, (t, h, d), dt), lse()


SPEC = SPEC.completed(
    run=merge_attention_states, reference=reference, inputs=_inputs,
    sizes=Sizes(gpu={"tokens": 4096, "heads": 32, "head_dim": 128}, cpu={"tokens": 512, "heads": 8, "head_dim": 64},
                quick={"tokens": 128, "heads": 8, "head_dim": 64}, tiny={"tokens": 1, "heads": 2, "head_dim": 16},
                odd=({"tokens": 1, "heads": 1, "head_dim": 1}, {"tokens": 37, "heads": 3, "head_dim": 24})),
    moved=lambda p, size: p["tokens"] * p["heads"] * (3 * p["head_dim"] * size + 12),
    summary="merge two attention results over disjoint keys by their log-sum-exps (cascade attention)")
