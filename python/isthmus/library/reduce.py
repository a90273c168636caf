"""sum and max: a multi-stage reduction of any length, into a one-element Buffer of the input dtype.

Stage one: at most GROUPS work-groups, each grid-striding over the input and reducing its share
in local memory to one partial (in the accumulator type). Stage two: one work-group reduces the
partials and writes the result in the input dtype.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from . import checks
from .family import Family, Tunable, resolve

_TUNABLES = (Tunable("WG", (8, 16, 32, 64, 128, 256, 512, 1024), 256), Tunable("VPT", (1, 2, 4, 8, 16), 8),
             Tunable("GROUPS", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), 1024),
             # 0: strided, coalesced loads (GPUs); 1: a contiguous chunk per work-item (CPUs)
             Tunable("LAYOUT", (0, 1), 0))
_COMMON = dict(source="reduce.cl", entries=("reduce_first", "reduce_final"),
               dtypes=("float32", "float64", "float16", "int32", "int64", "uint8"), tunables=_TUNABLES,
               problem=("n",), restrictions=("WG <= max_work_group_size", "WG * max(4, acc_size) <= local_mem_size"),
               cpu_defaults=(("WG", 16), ("VPT", 16), ("GROUPS", 16), ("LAYOUT", 1)))
SUM = Family(name="sum", defines=(("OP_SUM", 1),), **_COMMON)
MAX = Family(name="max", defines=(("OP_MAX", 1),), **_COMMON)


def _run(family: Family, x, out=None):
    x = checks.buffer(family.name, "x", x)
    dev, dt = x.device, x._dt
    n = x.size
    if n == 0:
        if family is MAX:
            raise InvalidArgumentError("max of an empty buffer: the maximum has no identity (like NumPy)")
        family.check_dtype(dev, dt)
        out = checks.output(family.name, out, x, (1,))
        dev._zero(out._handle(), out.nbytes)
        return out
    params, kernels = resolve(family, dev, dt, {"n": n})
    wg, vpt = params["WG"], params["VPT"]
    groups = max(1, min(-(-n // (wg * vpt)), params["GROUPS"]))
    acc = np.dtype({"float": np.float32, "double": np.float64}.get(dt.acc, x.dtype))
    out = checks.output(family.name, out, x, (1,))
    partial = dev.empty((groups,), acc)
    first, final = kernels["reduce_first"], kernels["reduce_final"]
    first._enqueue((groups * wg,), (wg,), [np.int64(n), dev._buffer_arg(x), dev._buffer_arg(partial)])
    final._enqueue((wg,), (wg,), [np.int64(groups), dev._buffer_arg(partial), dev._buffer_arg(out)])
    partial.close()  # freed once the queued work that reads it is done
    return out


def run_sum(x, out=None):
    return _run(SUM, x, out)


def run_max(x, out=None):
    return _run(MAX, x, out)


def reference_sum(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float16:
        return np.array([x.astype(np.float64).sum()], dtype=np.float16)
    if x.dtype.kind == "f":
        return np.array([x.astype(np.float64).sum()], dtype=x.dtype)
    return np.array([np.add.reduce(x, dtype=x.dtype)], dtype=x.dtype)


def reference_max(x: np.ndarray) -> np.ndarray:
    return np.array([x.max()], dtype=x.dtype)
