"""layernorm: (x - mean) / sqrt(var + eps) * weight + bias over the last dimension (weight and bias
optional: the plain form), optionally fused with the residual add of a transformer block
(``residual += x`` in place, the sum normalized).

The kernel is rmsnorm's (norm.cl, built with ``LAYERNORM=1``), with the same layouts, tunables
and rule; each item's mean and sum of squared deviations are exact over the values it holds and
merged by Chan's formula, so no variance is computed as a difference of large sums.
"""
from __future__ import annotations

from ..spec import Launch, OpSpec, Output, Scalar, Tensor
from .rmsnorm import SPEC as _RMS, grid


def reference(xp, x, weight=None, bias=None, eps=1e-5, residual=None):
    """In the kernel's precision (float64 for float64 inputs, else float32); with ``residual``, the
    sum as the kernel stores it (rounded to x's dtype) is what is normalized."""
    acc = xp.float64 if x.dtype == xp.float64 else xp.float32
    s = x if residual is None else (residual.astype(acc) + x.astype(acc)).astype(x.dtype)
    s = s.astype(acc)
    c = s - s.mean(axis=-1, keepdims=True)
    y = c / xp.sqrt((c * c).mean(axis=-1, keepdims=True) + acc(eps))
    if weight is not None:
        y = y * weight.astype(acc)
    if bias is not None:
        y = y + bias.astype(acc)
    return y.astype(x.dtype)


SPEC = _RMS.completed(
    name="layernorm", entries=("layernorm",), defines=(("LAYERNORM", 1),),
    args=(Tensor("x", min_ndim=1), Tensor("weight", shape=("cols",), optional=True),
          Tensor("bias", shape=("cols",), optional=True), Scalar("eps", default=1e-5, minimum=0.0),
          Tensor("residual", shape="x", optional=True, written=True)),
    out=Output(like="x", alias=True),  # out may be x itself
    launch=Launch("layernorm", grid, args=("rows:long", "cols:long", "eps", "x", "weight", "bias", "residual", "out")),
    # two team sums (the mean, then the squared deviations): two local arrays
    restrictions=tuple(r.replace("WG * acc_size", "2 * WG * acc_size") for r in _RMS.restrictions),
    reference=reference,
    inputs=lambda p, dt, rng: (*_RMS.inputs(p, dt, rng), _RMS.inputs({"rows": 1, "cols": p["cols"]}, dt, rng)[1]),
    moved=lambda p, size: (2 * p["rows"] * p["cols"] + 2 * p["cols"]) * size,
    summary="layer norm over the last dimension (weight, bias optional), optionally fused with residual += x",
    doc="""(x - mean) / sqrt(var + eps) * weight + bias over the last dimension of x (any leading
    dimensions; weight and bias have x.shape[-1] elements, each optional: the plain form without
    them), the biased variance as torch's layer_norm, in float32 arithmetic for 16-bit dtypes,
    rounded once; into a new Buffer or ``out`` (which may be x itself); returns it.

    ``residual`` (x's shape): the fused add of a transformer block, ``residual += x`` in place
    (rounded to the dtype) and the norm of that sum returned; residual shares memory with nothing
    else. ``eps`` >= 0.

    >>> h = isthmus.ops.layernorm(x, w, b)                              # torch's LayerNorm(hidden)
    >>> h = isthmus.ops.layernorm(x, eps=1e-6, residual=r, out=x)       # r += x; x = layernorm(r)
    """,
)
