"""Measuring configs and running a strategy under a budget.

One evaluation: compile (failure: ``compile_error``); run once and compare with the reference
(exception: ``launch_error``; mismatch: ``wrong``); one timed launch (slower than the time limit:
``timeout``); then warm-up and ``repeat`` timings with device events of a batch of launches that
cycles through several input sets, so that no config is flattered by data left in a cache. The
time is the median per launch.
Every evaluation is stored in the database as it happens, so a killed run keeps what it measured.
"""
from __future__ import annotations

import itertools
import math
import random
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..buffer import Buffer
from ..dtypes import lookup as dtype_lookup
from ..errors import CompileError
from ..graph import Graph
from ..measure import device_times
from ..ops.resolve import default_config
from ..ops.workloads import host_result
from . import strategies
from .space import Config, Space
from .strategies import BudgetExhausted
from .targets import Target


@dataclass(frozen=True)
class Measure:
    """How one config is timed."""

    warmup: int = 2
    repeat: int = 7
    input_sets: int = 3
    timeout_ms: float | None = None  # per launch; None: 10x the default config's time + 20 ms
    check: bool = True
    batch_ms: float = 1.0  # launches per timing: enough to fill about this long (see Bench._time)
    max_batch: int = 16  # most launches per input set in one timing


@dataclass(frozen=True)
class Budget:
    """When a search stops: after ``evaluations`` distinct configs and/or ``seconds`` (None: no limit)."""

    evaluations: int | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Evaluation:
    params: Config
    status: str  # ok, compile_error, launch_error, timeout, wrong
    time_ms: float | None
    error: str = ""

    def __post_init__(self):
        if not isinstance(self.params, Config):
            object.__setattr__(self, "params", Config(self.params))

    @property
    def cost(self) -> float:
        return self.time_ms if self.status == "ok" and self.time_ms is not None else math.inf


@dataclass
class Bench:
    """The inputs of one tuning run on a device: several input sets, the first one's reference, the check."""

    target: Target
    device: object
    problem: dict
    dtype: np.dtype
    measure: Measure
    seed: int = 0
    host: tuple = ()  # the first input set on the host: the check runs on it
    expected: np.ndarray | None = None  # the reference's output for ``host``, made at the first check
    sets: list = field(default_factory=list)

    def __post_init__(self):
        rng = np.random.default_rng(self.seed)
        for _ in range(max(1, self.measure.input_sets)):
            inputs = self.target.inputs(self.problem, self.dtype, rng)
            self.host = self.host or tuple(inputs)
            self.sets.append(tuple(self.device.asarray(a) for a in inputs))

    def close(self) -> None:
        for args in self.sets:
            for b in args:
                b.close()
        self.sets = []

    def _run(self, params: dict, args: tuple, read: bool = False):
        """The target run once with ``params`` (its result on the host when ``read``)."""
        out = self.target.run(params, args)
        got = host_result(out) if read else out
        if isinstance(out, Buffer) and all(out is not a for a in args):
            out.close()  # released once the queued work is done
        return got

    def evaluate(self, params: dict, timeout_ms: float | None) -> Evaluation:
        dev = self.device
        try:  # (the op's own call compiles what it launches: a build failure there is the config's compile_error)
            if self.measure.check and not self._check(params):
                return Evaluation(params, "wrong", None, "output differs from the reference")
            if not self.measure.check:
                self._run(params, self.sets[0])  # compiled before the timed launch
            dev.synchronize()
            with dev.timer() as t:  # one launch, host overhead included: the time limit and the batch size
                self._run(params, self.sets[0])
            if timeout_ms is not None and t.ms > timeout_ms:
                return Evaluation(params, "timeout", t.ms, f"one launch took {t.ms:.3g} ms > {timeout_ms:.3g} ms")
            return Evaluation(params, "ok", self._time(params, t.ms))
        except CompileError as exc:
            return Evaluation(params, "compile_error", None, _short(exc))
        except Exception as exc:
            with suppress(Exception):  # the device may be unusable after a failed launch; the next config says so
                dev.synchronize()
            return Evaluation(params, "launch_error", None, _short(exc))

    def _time(self, params: dict, first_ms: float) -> float:
        """Median device time per launch. The launches of one timing are captured into a graph that
        cycles through the input sets (a CUDA graph: no host time between them), enough of them
        to fill ~``batch_ms``, so even a microsecond kernel is timed as the device runs it."""
        dev, sets, m = self.device, self.sets, self.measure
        per_set = max(1, min(m.max_batch, math.ceil(m.batch_ms / max(first_ms * len(sets), 1e-3))))
        inner = per_set * len(sets)
        graph = Graph(dev)
        try:
            with graph:
                for j in range(inner):
                    self._run(params, sets[j % len(sets)])
        except Exception:  # a target that cannot be captured is timed launch by launch
            graph.close()
            graph, inner = None, 1
        cycle = itertools.cycle(sets)
        try:
            step = graph.launch if graph is not None else (lambda: self._run(params, next(cycle)))
            return device_times(dev, step, repeat=max(1, m.repeat), warmup=m.warmup).median / inner
        finally:
            if graph is not None:
                graph.close()

    def _check(self, params: dict) -> bool:
        # Kernels that overwrite an input need untouched inputs; the others check on the first set.
        fresh = tuple(self.device.asarray(a) for a in self.host) if self.target.in_place else None
        try:
            got = self._run(params, fresh or self.sets[0], read=True)
        finally:
            for b in fresh or ():
                b.close()
        if self.expected is None:
            self.expected = np.asarray(self.target.expect(*self.host))
        return self.target.check(got, self.expected, self.dtype, int(self.problem.get("k", 1)), host=self.host)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 600 else text[:600] + " ..."


def default_params(family, device, problem: dict, dtype) -> dict:
    return default_config(family, device, problem, dtype_lookup(dtype))


class Cost:
    """The cost function strategies call: each distinct config is measured (or replayed) once,
    counted against the budget, recorded, and reported to ``on_evaluation``; a config in ``known``
    (measured by an earlier run) costs its recorded time and nothing of the budget."""

    def __init__(self, evaluate: Callable[[dict], Evaluation], budget: Budget, space_size: int,
                 on_evaluation: Callable[[Evaluation], None] | None = None, clock=time.monotonic,
                 known: dict | None = None):
        self.evaluate_fn = evaluate
        self.budget = budget
        self.space_size = space_size
        self.on_evaluation = on_evaluation
        self.clock = clock
        self.start = clock()
        self.history: list[Evaluation] = []
        self.seen: dict = dict(known or {})  # Space.key -> cost; ``known``: measured before, free

    def __call__(self, config: dict) -> float:
        k = Space.key(config)
        if k in self.seen:
            return self.seen[k]
        b = self.budget
        if (b.evaluations is not None and len(self.history) >= b.evaluations) or \
                (b.seconds is not None and self.clock() - self.start >= b.seconds) or len(self.seen) >= self.space_size:
            raise BudgetExhausted
        ev = self.evaluate_fn(dict(config))
        self.history.append(ev)
        self.seen[k] = ev.cost
        if self.on_evaluation is not None:
            self.on_evaluation(ev)
        return ev.cost


def search(space: Space, cost: Cost, strategy: str, seed: int, options: dict | None = None) -> list[Evaluation]:
    """Run ``strategy`` over ``space`` until it finishes or the budget is spent; the evaluations."""
    module = strategies.get(strategy)
    opts = strategies.options(module, options)
    with suppress(BudgetExhausted):
        module.tune(space, cost, random.Random(seed), opts)
    return cost.history


def replay(space: Space, times: dict, strategy: str, budget: Budget, seed: int,
           options: dict | None = None) -> list[Evaluation]:
    """Run a strategy over recorded times (``{Space.key(config): ms or inf}``) without a device:
    Kernel Tuner's simulation mode, which makes comparing strategies over many seeds cheap."""
    def evaluate(config):
        t = times[Space.key(config)]
        return Evaluation(config, "ok", t) if math.isfinite(t) else Evaluation(config, "launch_error", None)

    return search(space, Cost(evaluate, budget, len(space)), strategy, seed, options)
