"""silu_mul and gelu_mul: gated linear units, ``act(gate) * up`` (SwiGLU, GeGLU), one pass.

``gate`` and ``up`` of one shape; or one buffer ``gate_up`` whose last dimension holds the gate in
its first half and up in its second (what a fused gate/up projection produces). The result has the
gate's shape (the last dimension halved for ``gate_up``). One kernel (glu.cl), the activation a
fixed define per op (gelu's form a define the call picks).
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes, Tunable, sample

_APPROXIMATE = {"tanh": 1, "none": 2}  # gelu_mul's approximate= -> ACT

GLU_SIZES = Sizes(gpu={"rows": 4096, "cols": 14336}, cpu={"rows": 512, "cols": 4096},
                  quick={"rows": 256, "cols": 1024}, tiny={"rows": 4, "cols": 64},
                  odd=({"rows": 1, "cols": 1}, {"rows": 3, "cols": 1000}, {"rows": 7, "cols": 4097}))


def span(p: dict) -> int:
    """Columns of a row one work-group covers (glu.cl and embedding.cl's launch)."""
    return p["WG"] * p["VPT"] * (16 if p["LAYOUT"] == 1 else 1)


def row_grid(rows: int, cols: int, p: dict) -> tuple[tuple[int], tuple[int]]:
    """A group per (row, span of columns) (glu.cl and embedding.cl)."""
    return (max(1, rows * -(-cols // span(p))) * p["WG"],), (p["WG"],)


# one tunable space for the row kernels (glu.cl, embedding.cl): LAYOUT 0 strides WG items over a
# span of WG*VPT columns (coalesced: GPUs); LAYOUT 1 (CPUs: OpenCL vectors, which the CUDA prelude
# lacks) gives each item a contiguous VPT*16 columns as 16-wide vectors
ROW_TUNABLES = (Tunable("WG", (1, 4, 16, 32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8, 16, 32), 4),
                Tunable("LAYOUT", (0, 1), 0))
ROW_RESTRICTIONS = ("WG <= max_work_group_size", "LAYOUT == 0 or is_cpu", "WG >= 32 or LAYOUT == 1",
                    "VPT <= 8 or LAYOUT == 1")


def _spec(name: str, act: int, summary: str) -> OpSpec:
    return OpSpec(
        name=name, source="glu.cl", entries=("glu",), dtypes=("float32", "float64", "float16", "bfloat16"),
        defines=(("ACT", act),), tunables=ROW_TUNABLES, problem=("rows", "cols"), restrictions=ROW_RESTRICTIONS,
        # PoCL, 2 shared cores: see benchmarks/results/runs/2026-12-04-pointwise-pocl/
        cpu_defaults=(("WG", 16), ("VPT", 4), ("LAYOUT", 1)),
        sizes=GLU_SIZES, moved=lambda p, size: 3 * p["rows"] * p["cols"] * size,
        inputs=lambda p, dt, rng: (sample(rng, (p["rows"], p["cols"]), dt), sample(rng, (p["rows"], p["cols"]), dt)),
        summary=summary, tolerance=8.0)


def _steps(spec: OpSpec, dev, dt, shape: tuple, rows: int, cols: int, act: int) -> tuple:
    """The kernel and grid for (rows, cols) as launched; the config is the one of the result's
    (rows, last dimension), the problem as the tuner and the user see it."""
    problem = {"rows": max(math.prod(shape[:-1]), 1), "cols": max(shape[-1], 1)}
    params, kernels = resolve(spec, dev, dt, problem, (("ACT", act),))
    return (kernels["glu"], *row_grid(rows, cols, params))


def _run(spec: OpSpec, gate, up, out, act: int):
    name = spec.name
    gate = checks.buffer(name, "gate", gate)
    dev, dt, shape = gate.device, gate._dt or checks.dtype(gate), gate.shape
    if not shape:
        raise InvalidArgumentError(f"{name}: gate must have at least one dimension, got a 0-d buffer")
    fused = up is None
    if fused:  # gate_up: the last dimension's halves
        if shape[-1] % 2:
            raise InvalidArgumentError(f"{name}: a single gate_up buffer holds gate and up in the halves of its "
                                       f"last dimension, which must be even; got shape {shape}")
        cols = shape[-1] // 2
        rows = math.prod(shape[:-1])
        stride, up_off, out_shape = 2 * cols, cols, (*shape[:-1], cols)
        up = gate
    else:
        up = checks.buffer(name, "up", up)
        checks.like(name, gate, "up", up)
        if up.shape != shape:
            raise InvalidArgumentError(f"{name}: gate has shape {shape} and up {up.shape}; they must be equal "
                                       f"(or pass one gate_up buffer whose last dimension holds both)")
        rows, cols = 1, math.prod(shape)  # contiguous: one row
        stride, up_off, out_shape = cols, 0, shape
    key = (dev, dt.name, shape, fused, act)
    kernel, g, loc = plan(spec, key, lambda: _steps(spec, dev, dt, out_shape, rows, cols, act))
    y = checks.output(name, out, gate, out_shape)
    checks.disjoint(name, y, gate=gate, up=up)
    if rows * cols:
        dev.launch(kernel, g, loc, [np.int64(rows), np.int64(cols), np.int64(stride), np.int64(up_off), gate, up, y])
    return y


def silu_mul(gate, up=None, out=None):
    """SwiGLU: ``silu(gate) * up`` (silu(g) = g / (1 + exp(-g))), into a new Buffer or ``out``.
    ``up=None``: ``gate`` is one gate_up buffer, its last dimension the gate's half then up's.

    >>> h = isthmus.ops.silu_mul(gate, up)          # (tokens, 14336)
    >>> h = isthmus.ops.silu_mul(gate_up)           # (tokens, 28672) -> (tokens, 14336)
    """
    return _run(SILU, gate, up, out, 0)


def gelu_mul(gate, up=None, approximate="tanh", out=None):
    """GeGLU: ``gelu(gate) * up``, gelu's ``approximate`` form as torch's: ``"tanh"``
    (0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))) or ``"none"`` (0.5 g (1 + erf(g / sqrt 2))).
    ``up=None``: ``gate`` is one gate_up buffer (last dimension: gate's half, then up's).

    >>> h = isthmus.ops.gelu_mul(gate, up, approximate="none")
    """
    act = _APPROXIMATE.get(approximate) if isinstance(approximate, str) else None
    if act is None:
        raise InvalidArgumentError(f"gelu_mul: approximate must be 'tanh' or 'none', got {approximate!r}")
    return _run(GELU, gate, up, out, act)


def _halves(xp, gate, up):
    if up is None:
        n = gate.shape[-1] // 2
        return gate[..., :n], gate[..., n:]
    return gate, up


def _acc(xp, x):
    return x.astype(xp.float64 if x.dtype == xp.float64 else xp.float32, copy=False)


def reference_silu(xp, gate, up=None):
    g, u = _halves(xp, gate, up)
    g, u = _acc(xp, g), _acc(xp, u)
    return (g / (1 + xp.exp(-g)) * u).astype(gate.dtype, copy=False)


def _erf(xp, x):
    if xp is np:
        return np.frompyfunc(math.erf, 1, 1)(x).astype(x.dtype)
    from cupyx.scipy.special import erf  # (CuPy's, on the device)

    return erf(x)


def reference_gelu(xp, gate, up=None, approximate="tanh"):
    g, u = _halves(xp, gate, up)
    g, u = _acc(xp, g), _acc(xp, u)
    if approximate == "tanh":
        act = 0.5 * g * (1 + xp.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))
    else:
        act = 0.5 * g * (1 + _erf(xp, g / math.sqrt(2)))
    return (act * u).astype(gate.dtype, copy=False)


SILU = _spec("silu_mul", 0, "SwiGLU: silu(gate) * up (or of one gate_up buffer's halves)").completed(
    run=silu_mul, reference=reference_silu, doc=silu_mul.__doc__)
GELU = _spec("gelu_mul", 1, "GeGLU: gelu(gate) * up, tanh or erf form (or of one gate_up buffer's halves)").completed(
    run=gelu_mul, reference=reference_gelu, doc=gelu_mul.__doc__)
SPECS = (SILU, GELU)
