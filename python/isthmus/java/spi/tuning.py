"""The tuner seen from Java (``io.isthmus.Tuner`` through ``io.isthmus.spi.Runtime``): runs
:func:`isthmus.tune.tune` and reports the result as an ``io.isthmus.spi.TuneRun``."""
from __future__ import annotations

import inspect
import math

import jpype
import numpy as np

from isthmus.dtypes import lookup
from isthmus.errors import InvalidArgumentError
from isthmus.ops import registry
from isthmus.ops.resolve import resolve
from isthmus.tune import arguments, prepare, run
from isthmus.tune.arguments import JAVA
from isthmus.tune.targets import declare as py_declare

from .buffers import argument
from .proxy import implements, reads


def _problem(jmap) -> dict:
    return {str(e.getKey()): int(e.getValue()) for e in jmap.entrySet()}


def _jmap(d: dict, jtype=jpype.JLong):
    out = jpype.JClass("java.util.LinkedHashMap")()
    for k, v in d.items():
        out.put(str(k), jtype(int(v)))
    return out


@implements("io.isthmus.spi.TuneRun")
class TuneRun:
    def __init__(self, result):
        self.result = result

    kernel = reads("result.kernel")
    device = reads("result.device")
    best = reads("result.best", _jmap)
    bestMs = reads("result.best_ms", float)
    defaults = reads("result.default", _jmap)
    defaultMs = reads("result.default_ms", lambda ms: math.nan if ms is None else float(ms))
    byStatus = reads("result.by_status", _jmap)
    evaluations = reads("result.evaluations", len)
    spaceSize = reads("result.space_size")


def tune(kernel, device, problem, dtype, strategy, budget, seconds, seed, flags) -> TuneRun:
    # Tuner's budget(0) and seconds(0) are its documented defaults; anything below is refused with
    # a hint in the builder's syntax, like every other argument (arguments.JAVA)
    variant = {str(e.getKey()): bool(e.getValue()) for e in flags.entrySet()}
    taken = sorted(set(variant) & set(inspect.signature(prepare).parameters))
    if taken:  # (Tuner.flag("budget", true) must not reach prepare()'s own arguments)
        raise InvalidArgumentError(f"Tuner.flag({taken[0]!r}, ...): {kernel} has no variant flag {taken[0]!r}; "
                                   f"set it with its own Tuner method")
    job = prepare(str(kernel), device=device, problem=_problem(problem), strategy=str(strategy),
                  budget=int(budget) or None, seconds=float(seconds) or None, seed=int(seed), dtype=str(dtype),
                  syntax=JAVA, **variant)
    return TuneRun(run(job))


def tuned_config(kernel, device, problem, dtype):
    dt = lookup(str(dtype))
    # (the latter raises, naming the known kernels); the family that runs the dtype (gemm's bf16: gemm_mma)
    fam = (registry.get(str(kernel)) or registry.library_op(str(kernel))).family(dt)
    sizes = arguments.problem(fam, _problem(problem), JAVA)
    return _jmap(resolve(fam, device, dt, sizes)[0])


_JAVA_ARRAY = {np.dtype(np.float32): jpype.JFloat, np.dtype(np.float64): jpype.JDouble,
               np.dtype(np.int32): jpype.JInt, np.dtype(np.int64): jpype.JLong}


def _to_java(host: np.ndarray):
    try:
        jtype = _JAVA_ARRAY[host.dtype]
    except KeyError:
        raise TypeError(f"a Java-declared kernel's data must be float32, float64, int32 or int64, "
                        f"got {host.dtype}") from None
    out = jpype.JArray(jtype)(host.size)
    out[:] = host.ravel()
    return out


def declare(name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space) -> None:
    """Python's :func:`isthmus.tune.declare` with the Java ``KernelSpace`` callbacks."""
    tun = {str(e.getKey()): (tuple(int(v) for v in e.getValue()), int(defaults.get(e.getKey())))
           for e in tunables.entrySet()}

    def grid(p, c):
        g, loc = space.grid(_jmap(p), _jmap(c))
        return tuple(int(x) for x in g), tuple(int(x) for x in loc)

    def inputs(p, dt, rng):
        arrays = space.inputs(_jmap(p), jpype.JLong(int(rng.integers(1 << 62))))
        return tuple(np.array(a) for a in arrays)

    def scalars(p):
        return tuple(argument(v) for v in space.scalars(_jmap(p)))  # (boxed numbers: int or float)

    def reference(*host):
        args = jpype.JArray(jpype.JObject)([_to_java(h) for h in host])
        return np.array(space.reference(args))

    py_declare(str(name), str(source), entry=str(entry), tunables=tun, problem=tuple(str(x) for x in problem),
               grid=grid, inputs=inputs, reference=reference, output=int(output), scalars=scalars,
               restrictions=tuple(str(r) for r in restrictions), dtypes=(str(dtype),))
