"""The tuner seen from Java (``io.isthmus.Tuner`` through ``io.isthmus.spi.Runtime``): runs
:func:`isthmus.tune.tune` and reports the result as an ``io.isthmus.spi.TuneRun``."""
from __future__ import annotations

import math

import jpype

from ..java.provider import _spi


def _problem(jmap) -> dict:
    return {str(e.getKey()): int(e.getValue()) for e in jmap.entrySet()}


def _jmap(d: dict, jtype=jpype.JLong):
    out = jpype.JClass("java.util.LinkedHashMap")()
    for k, v in d.items():
        out.put(str(k), jtype(int(v)))
    return out


@jpype.JImplements("io.isthmus.spi.TuneRun", deferred=True)
class TuneRun:
    def __init__(self, result):
        self.result = result

    @_spi
    def kernel(self):
        return self.result.kernel

    @_spi
    def device(self):
        return self.result.device

    @_spi
    def best(self):
        return _jmap(self.result.best)

    @_spi
    def bestMs(self):
        return float(self.result.best_ms)

    @_spi
    def defaults(self):
        return _jmap(self.result.default)

    @_spi
    def defaultMs(self):
        return math.nan if self.result.default_ms is None else float(self.result.default_ms)

    @_spi
    def byStatus(self):
        return _jmap(self.result.by_status)

    @_spi
    def evaluations(self):
        return len(self.result.evaluations)

    @_spi
    def spaceSize(self):
        return self.result.space_size


def tune(kernel, device, problem, dtype, strategy, budget, seconds, seed) -> TuneRun:
    from . import tune as run

    result = run(str(kernel), device=device, problem=_problem(problem), strategy=str(strategy),
                 budget=int(budget) or None, seconds=float(seconds) or None, seed=int(seed), dtype=str(dtype))
    return TuneRun(result)


def tuned_config(kernel, device, problem, dtype):
    from ..dtypes import lookup
    from ..errors import InvalidArgumentError
    from ..library import family
    from ..library.family import resolve

    fam = family(str(kernel))
    sizes = _problem(problem)
    if set(sizes) != set(fam.problem):
        raise InvalidArgumentError(f"{fam.name}: problem must name the sizes {', '.join(fam.problem)}, got "
                                   f"{', '.join(sizes) or 'none'}")
    return _jmap(resolve(fam, device, lookup(str(dtype)), sizes)[0])
