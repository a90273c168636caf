"""linear_attention: the kernel trick of Katharopoulos et al. (linear_attention.cl): softmax replaced
by a feature map phi, so that attention is ``phi(q_i) . S / phi(q_i) . z`` with S and z sums over the
keys; causal as chunked prefix sums of phi(k) v^T in f32, not causal as two reductions; the state
(S, z) returned and accepted, so a recurrent step costs O(1) per token."""
from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable, sample
from .attention import MAX_HEAD_DIM, f32_output

FEATURE_MAPS = ("elu1", "relu", "identity")
_CHUNKS = (4, 8, 16, 32, 64)


def rule(buckets: dict, device, dt, params: dict) -> dict:
    """A work-group of head_dim items (an item per value column) up to 256; chunks of 32 tokens
    where local memory holds them (64 KiB-class devices at head dim 128 take 16)."""
    d = buckets["head_dim"]
    wg = max(8, min(256 if device.kind != "cpu" else 64, d, device.max_work_group_size))
    c = 32
    while c > 4 and (2 * c * d + c * c + c + d) * 4 > device.local_mem_size:
        c //= 2
    return {"WG": wg, "C": c}


SPEC = OpSpec(
    name="linear_attention", source="linear_attention.cl", entries=("linear_attention",),
    dtypes=("float32", "float16", "bfloat16"),
    tunables=(Tunable("WG", (8, 16, 32, 64, 128, 256), 64), Tunable("C", _CHUNKS, 16)),
    problem=("batch", "seq", "heads", "head_dim"),
    restrictions=("WG <= max_work_group_size", "(2 * C * min(head_dim, 256) + C * C + C + min(head_dim, 256)) * acc_size <= local_mem_size"),
    cpu_defaults=(("WG", 32),),
    rule=rule,
)


def linear_attention(q, k, v, causal=True, feature_map="elu1", chunk=None, state=None, return_state=False,
                     out=None) -> "Buffer | tuple[Buffer, Buffer]":
    """Linear attention ``o_i = phi(q_i) . sum_j phi(k_j) v_j^T / phi(q_i) . sum_j phi(k_j)`` (j <= i
    when ``causal``) on ``(batch, seq, heads, head_dim)`` q, k, v; ``feature_map``: "elu1" (elu(x) + 1),
    "relu" or "identity" (a zero denominator gives 0). ``chunk``: tokens per chunk of the causal scan
    (4 to 64, a power of two; None: the tuned one). ``state``: float32 ``(batch, heads, head_dim,
    head_dim + 1)`` (S, then z as the last column): the sums of earlier keys, continued from and
    updated in place (a recurrent decode step: a call per token, O(1) work each). ``return_state``:
    also return the state (a new buffer when none is given). Returns o (and the state).

    >>> o, st = isthmus.ops.linear_attention(q, k, v, return_state=True)     # prefill
    >>> o1 = isthmus.ops.linear_attention(q1, k1, v1, state=st)             # one step: st updated
    """
    op = "linear_attention"
    q = checks.buffer(op, "q", q, ndim=4)
    k = checks.buffer(op, "k", k, ndim=4)
    v = checks.buffer(op, "v", v, ndim=4)
    checks.like(op, q, "k", k)
    checks.like(op, q, "v", v)
    if not q.shape == k.shape == v.shape:
        raise InvalidArgumentError(f"{op}: q, k and v must have one shape (batch, seq, heads, head_dim), got "
                                   f"{q.shape}, {k.shape}, {v.shape}")
    b, s, h, d = q.shape
    if not 1 <= d <= MAX_HEAD_DIM:
        raise InvalidArgumentError(f"{op}: head_dim {d} is not supported; it must be 1 to {MAX_HEAD_DIM}")
    causal = checks.flag(op, "causal", causal)
    return_state = checks.flag(op, "return_state", return_state)
    if feature_map not in FEATURE_MAPS:
        raise InvalidArgumentError(f"{op}: feature_map = {feature_map!r}; it must be one of "
                                   f"{', '.join(repr(f) for f in FEATURE_MAPS)}")
    if chunk is not None and (isinstance(chunk, bool) or chunk not in _CHUNKS):
        raise InvalidArgumentError(f"{op}: chunk = {chunk!r}; it must be one of {', '.join(map(str, _CHUNKS))} "
                                   f"or None (the tuned chunk)")
    dev, dt = q.device, q._dt or checks.dtype(q)
    given = state
    if state is not None or return_state:
        state = f32_output(op, "state", state, q, (b, h, d, d + 1))
    if given is not None:
        checks.disjoint(op, state, "state", q=q, k=k, v=v)

    def steps():
        problem = {"batch": max(b, 1), "seq": max(s, 1), "heads": max(h, 1), "head_dim": max(d, 1)}
        params, kernels = resolve(SPEC, dev, dt, problem, (("HD", d),))
        if chunk is not None and chunk != params["C"]:
            params = {**params, "C": chunk}
            if not SPEC.is_valid(params, dev, problem, dt):
                raise InvalidArgumentError(f"{op}: chunk = {chunk} does not fit {dev.id}'s local memory at head_dim "
                                           f"{d}; take a smaller one")
            kernels = SPEC.kernels(dev, dt, {**params, "HD": d})
        return kernels["linear_attention"], (params["WG"], h, b), (params["WG"], 1, 1)

    kern, g, loc = plan(SPEC, (dev, dt.name, q.shape, chunk), steps)
    o = checks.output(op, out, q, q.shape)
    if out is not None:
        checks.disjoint(op, o, q=q, k=k, v=v)
    if b * h * d and (s or state is not None):
        dev.launch(kern, g, loc, [s, h, int(causal), FEATURE_MAPS.index(feature_map), q, k, v, o, state,
                                  int(given is not None), int(state is not None)])
    return (o, state) if return_state else o


def phi(xp, x, feature_map="elu1"):
    if feature_map == "elu1":
        return xp.where(x > 0, x + 1, xp.exp(xp.minimum(x, 0)))
    return xp.maximum(x, 0) if feature_map == "relu" else x


def reference(xp, q, k, v, causal=True, feature_map="elu1"):
    """Linear attention by its definition (quadratic: the masked phi(Q) phi(K)^T), float32."""
    acc = xp.float64 if q.dtype == xp.float64 else xp.float32
    fq, fk = phi(xp, q.astype(acc), feature_map), phi(xp, k.astype(acc), feature_map)
    a = xp.einsum("bihd,bjhd->bhij", fq, fk)
    if causal:
        a = a * xp.tril(xp.ones(a.shape[-2:], dtype=acc))
    den = a.sum(axis=-1)[..., None]
    o = xp.einsum("bhij,bjhd->bhid", a, v.astype(acc)) / xp.where(den != 0, den, 1)
    return xp.where(den != 0, o, 0).transpose(0, 2, 1, 3).astype(q.dtype)


SPEC = SPEC.completed(
    run=linear_attention, reference=reference,
    inputs=lambda p, dt, rng: tuple(sample(rng, (p["batch"], p["seq"], p["heads"], p["head_dim"]), dt) for _ in "qkv"),
    sizes=Sizes(gpu={"batch": 1, "seq": 32768, "heads": 32, "head_dim": 128},
                cpu={"batch": 1, "seq": 1024, "heads": 4, "head_dim": 64},
                quick={"batch": 1, "seq": 256, "heads": 2, "head_dim": 64},
                tiny={"batch": 1, "seq": 8, "heads": 1, "head_dim": 16},
                odd=({"batch": 1, "seq": 1, "heads": 1, "head_dim": 1}, {"batch": 2, "seq": 37, "heads": 3, "head_dim": 24})),
    moved=lambda p, size: 4 * p["batch"] * p["seq"] * p["heads"] * p["head_dim"] * size,
    flops=lambda p: 4 * p["batch"] * p["seq"] * p["heads"] * p["head_dim"] ** 2,
    tolerance=16.0,
    summary="linear attention (elu1/relu/identity feature maps), causal chunked scan, state in and out")
