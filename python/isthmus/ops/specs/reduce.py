"""sum and max: a multi-stage reduction of any length, into a one-element Buffer.

The result's dtype is NumPy's: a sum of int32 is int64, of uint8 uint64 (integer sums run in 64
bits, wrapping only past those); floats keep their dtype (float16 and bfloat16 sum in float32
and round once); max keeps the input dtype.

Stage one: at most GROUPS work-groups, each grid-striding over the input and reducing its share
in local memory to one partial (in the accumulator type). Stage two: one work-group reduces the
partials and writes the result in its dtype.

The partials live in the calling thread's scratch memory on the device (``Device._scratch``),
reused by every reduction on that thread, so a call allocates nothing but its result (nothing at
all with ``out=``). While a graph is being captured they get a buffer of their own, which the
graph keeps.
"""
from __future__ import annotations

import builtins

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import ELEMENTS, OpSpec, Tunable, sample

_TUNABLES = (Tunable("WG", (8, 16, 32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8, 16, 32, 64), 8),
             Tunable("GROUPS", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), 1024),
             # 0: strided, coalesced loads (GPUs); 1: a contiguous chunk per work-item (CPUs);
             # 2: LAYOUT 1 read as OpenCL vectors (CPUs only: the CUDA prelude has no 16-wide vectors)
             Tunable("LAYOUT", (0, 1, 2), 0))
_BF16 = "bfloat16"  # (a dtype compares equal to its name; ml_dtypes stays unimported until needed)
_OUT_SHAPE = (1,)
# NumPy's dtype of a sum (np.add.reduce): integers widen to 64 bits of their signedness
_SUM_DTYPE = {"int32": lookup("int64"), "uint8": lookup("uint64")}
# The scratch asked for: room for the most partials any config makes, in the widest accumulator (8
# bytes), so each thread allocates it once.
_SCRATCH_NBYTES = builtins.max(next(t for t in _TUNABLES if t.name == "GROUPS").values) * 8


def result_dtype(spec: OpSpec, dt):
    """The DType of the op's result for input dtype ``dt`` (see the module's docstring)."""
    return _SUM_DTYPE.get(dt.name, dt) if spec is SUM else dt


def _steps(spec: OpSpec, dev, dt, n: int) -> tuple:
    """(reduce_first, its grid, n, reduce_final, its grid, number of partials, result dtype)."""
    params, kernels = resolve(spec, dev, dt, {"n": n})
    wg, vpt = params["WG"], params["VPT"]
    groups = builtins.max(1, min(-(-n // (wg * vpt)), params["GROUPS"]))
    return (kernels["reduce_first"], (groups * wg,), (wg,), np.int64(n), kernels["reduce_final"], (wg,), (wg,),
            np.int64(groups), result_dtype(spec, dt))


def _run(spec: OpSpec, x, out=None):
    name = spec.name
    x = checks.buffer(name, "x", x)
    dev, dt = x.device, x._dt or checks.dtype(x)
    nbytes = x.nbytes
    if nbytes == 0:
        if spec is MAX:
            raise InvalidArgumentError("max of an empty buffer: the maximum has no identity (like NumPy)")
        spec.check_dtype(dev, dt)
        out = _output(name, out, x, result_dtype(spec, dt))
        dev._device_zero(out._handle(), out.nbytes)
        return out
    first, g1, l1, n, final, g2, l2, groups, rdt = plan(
        spec, (dev, dt.name, nbytes), lambda: _steps(spec, dev, dt, x.size))
    out = _output(name, out, x, rdt)
    # (out may be x's memory: the first launch reads all of x before the second writes out)
    partial = dev._temporary(_SCRATCH_NBYTES)
    dev.launch(first, g1, l1, [n, x, partial])
    dev.launch(final, g2, l2, [groups, partial, out])
    return out


def _output(op: str, out, x, rdt):
    """``out`` checked to take the result (x's device, dtype ``rdt``, one element), or a new buffer."""
    if out is None:
        return Buffer._allocate(x.device, _OUT_SHAPE, rdt, rdt.np.itemsize)
    if out.__class__ is Buffer and out._dt is rdt and out.device is x.device and out.shape == _OUT_SHAPE:
        return out
    out = checks.buffer(op, "out", out)
    if out.device is not x.device:
        raise InvalidArgumentError(f"{op}: out lives on {out.device.id}, x on {x.device.id}; "
                                   f"copy it with .to({x.device.id!r})")
    if out._dt is not rdt:
        why = f" (NumPy's dtype of a sum of {x.dtype})" if rdt is not x._dt else ""
        raise InvalidArgumentError(f"{op}: out has dtype {out.dtype}, the result is {rdt.name}{why}")
    if out.shape != _OUT_SHAPE:
        raise InvalidArgumentError(f"{op}: out has shape {out.shape}, the result has shape {_OUT_SHAPE}")
    return out


# (these two shadow the builtins in this module: it calls builtins.max)
def sum(x, out=None):  # noqa: A001 - mirrors numpy.sum
    """The sum of all elements, as a one-element Buffer (``out`` to reuse one) of NumPy's dtype for
    the sum: int64 for int32, uint64 for uint8 (integer sums run in 64 bits), x's dtype for floats
    (float16 and bfloat16 accumulate in float32 and round once).

    >>> s = isthmus.ops.sum(dev.asarray(np.full(10, 2**31 - 1, np.int32)))   # int64: 21474836470
    """
    return _run(SUM, x, out)


def max(x, out=None):  # noqa: A001 - mirrors numpy.max
    """The largest element, as a one-element Buffer of x's dtype (an empty x is an error)."""
    return _run(MAX, x, out)


def reference_sum(xp, x):
    if x.dtype.kind == "f" or x.dtype == _BF16:
        acc = xp.float64 if x.dtype == xp.float64 else xp.float32
        return x.astype(acc, copy=False).sum().reshape(1).astype(x.dtype)
    return x.sum(dtype=xp.uint64 if x.dtype.kind == "u" else xp.int64).reshape(1)  # (NumPy's sum dtype)


def reference_max(xp, x):
    if x.dtype == _BF16:  # exact in float32
        return x.astype(xp.float32).max().reshape(1).astype(x.dtype)
    return x.max().reshape(1)


def _spec(name: str, op: str, run, reference, error: str) -> OpSpec:
    return OpSpec(
        name=name, defines=((op, 1),), source="reduce.cl", entries=("reduce_first", "reduce_final"),
        dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"), tunables=_TUNABLES,
        problem=("n",), restrictions=("WG <= max_work_group_size", "WG * 8 <= local_mem_size",  # (8: 64-bit sums)
                                      # VPT 32 and 64 are 2 and 4 vector accumulators of LAYOUT 2
                                      "VPT <= 16 or LAYOUT == 2", "LAYOUT < 2 or (is_cpu and VPT >= 4)"),
        # PoCL 3.1 on an Intel Xeon (benchmarks/results/runs/2026-12-03-memory-bound-pocl-shipped/): LAYOUT 2 runs
        # max at NumPy's speed per core where LAYOUT 1's scalar code ran at 0.55-0.7x of it
        cpu_defaults=(("WG", 16), ("VPT", 64), ("GROUPS", 16), ("LAYOUT", 2)),
        run=run, reference=reference, inputs=lambda p, dt, rng: (sample(rng, p["n"], dt),), sizes=ELEMENTS,
        # (a sum of mixed signs can cancel to near zero: its error is judged against the magnitudes)
        error=error,
        moved=lambda p, size: p["n"] * size, summary=f"the {name} of all elements, as a one-element buffer")


SUM = _spec("sum", "OP_SUM", sum, reference_sum, "magnitude")
MAX = _spec("max", "OP_MAX", max, reference_max, "relative")
SPECS = (SUM, MAX)
