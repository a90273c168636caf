"""sum and max: a multi-stage reduction of any length, into a one-element Buffer of the input dtype.

Stage one: at most GROUPS work-groups, each grid-striding over the input and reducing its share
in local memory to one partial (in the accumulator type). Stage two: one work-group reduces the
partials and writes the result in the input dtype.

The partials live in the calling thread's scratch memory on the device (``Device._scratch``),
reused by every reduction on that thread, so a call allocates nothing but its result (nothing at
all with ``out=``). While a graph is being captured they get a buffer of their own, which the
graph keeps.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...buffer import Buffer
from ...dtypes import lookup
from ...errors import InvalidArgumentError
from .. import checks
from ..spec import Family, Tunable, recall, recipes, resolve

_TUNABLES = (Tunable("WG", (8, 16, 32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8, 16), 8),
             Tunable("GROUPS", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), 1024),
             # 0: strided, coalesced loads (GPUs); 1: a contiguous chunk per work-item (CPUs)
             Tunable("LAYOUT", (0, 1), 0))
_COMMON = dict(source="reduce.cl", entries=("reduce_first", "reduce_final"),
               dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"), tunables=_TUNABLES,
               problem=("n",), restrictions=("WG <= max_work_group_size", "WG * max(4, acc_size) <= local_mem_size"),
               cpu_defaults=(("WG", 16), ("VPT", 16), ("GROUPS", 16), ("LAYOUT", 1)))
SUM = Family(name="sum", defines=(("OP_SUM", 1),), **_COMMON)
MAX = Family(name="max", defines=(("OP_MAX", 1),), **_COMMON)
_RECIPES = recipes()
_BF16 = lookup("bfloat16").np
_OUT_SHAPE = (1,)
# The scratch asked for: room for the most partials any config makes, in the widest accumulator (8
# bytes), so each thread allocates it once.
_SCRATCH_NBYTES = max(next(t for t in _TUNABLES if t.name == "GROUPS").values) * 8


class _Recipe(NamedTuple):
    first: Any  # Kernel: reduce_first
    first_global: tuple
    first_local: tuple
    n: np.int64
    final: Any  # Kernel: reduce_final
    final_global: tuple
    final_local: tuple
    groups: np.int64  # how many partials
    out_nbytes: int
    acc: Any  # DType of the partials
    count: int  # int(groups)
    partial_nbytes: int


def _recipe(family: Family, dev, dt, n: int) -> _Recipe:
    params, kernels = resolve(family, dev, dt, {"n": n})
    wg, vpt = params["WG"], params["VPT"]
    groups = max(1, min(-(-n // (wg * vpt)), params["GROUPS"]))
    acc = lookup({"float": "float32", "double": "float64"}.get(dt.acc, dt.name))
    return _Recipe(kernels["reduce_first"], (groups * wg,), (wg,), np.int64(n), kernels["reduce_final"], (wg,),
                   (wg,), np.int64(groups), dt.np.itemsize, acc, groups, groups * acc.np.itemsize)


def _run(family: Family, x, out=None):
    name = family.name
    x = checks.buffer(name, "x", x)
    dev, dt = x.device, x._dt or x._check()  # (closed since the check: raises)
    nbytes = x.nbytes
    if nbytes == 0:
        if family is MAX:
            raise InvalidArgumentError("max of an empty buffer: the maximum has no identity (like NumPy)")
        family.check_dtype(dev, dt)
        out = checks.output(name, out, x, _OUT_SHAPE)
        dev._zero(out._handle(), out.nbytes)
        return out
    (first, g1, l1, n, final, g2, l2, groups, out_nbytes, acc, count, partial_nbytes), fast = recall(
        _RECIPES, (name, dev, dt.name, nbytes), dev, lambda: _recipe(family, dev, dt, x.size))
    out = checks.output(name, out, x, _OUT_SHAPE, nbytes=out_nbytes)
    if fast:
        partial = dev._scratch(_SCRATCH_NBYTES).arg
        launch = dev._launch
        launch(first, g1, l1, [n, x._arg or x._launch_arg(), partial])
        launch(final, g2, l2, [groups, partial, out._arg or out._launch_arg()])
        return out
    partial = Buffer._allocate(dev, (count,), acc, partial_nbytes)
    dev._launch(first, g1, l1, [n, dev._buffer_arg(x), dev._buffer_arg(partial)])
    dev._launch(final, g2, l2, [groups, dev._buffer_arg(partial), dev._buffer_arg(out)])
    partial.close()  # freed once the queued work that reads it is done (a graph being captured keeps it)
    return out


def run_sum(x, out=None):
    return _run(SUM, x, out)


def run_max(x, out=None):
    return _run(MAX, x, out)


def reference_sum(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float16 or x.dtype == _BF16:
        return np.array([x.astype(np.float64).sum()], dtype=x.dtype)
    if x.dtype.kind == "f":
        return np.array([x.astype(np.float64).sum()], dtype=x.dtype)
    return np.array([np.add.reduce(x, dtype=x.dtype)], dtype=x.dtype)


def reference_max(x: np.ndarray) -> np.ndarray:
    if x.dtype == _BF16:  # exact in float32
        return np.array([x.astype(np.float32).max()], dtype=x.dtype)
    return np.array([x.max()], dtype=x.dtype)
