"""What the tuner measures: a kernel with its inputs, its call and its reference.

Library kernels are measured through their own ``run`` (the op users call) with the candidate
config forced for the call, so tuning measures exactly the launches users get. Users' own
kernels are declared with :func:`declare` (source, tunables, restrictions, problem sizes, grid
rule, inputs, reference) and are tuned, stored and looked up like the library's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..dtypes import lookup
from ..launch import LaunchConfig
from ..ops import registry
from ..ops.registry import OPS
from ..ops.resolve import forced, plan, resolve
from ..ops.spec import OpSpec, Tunable
from ..workloads import rel_error, tolerance
from .space import register


@dataclass
class Target:
    """A tunable kernel: ``inputs(problem, dtype, rng)`` -> host arrays; ``call(device args)`` -> the
    result Buffer (run with the config in force); ``expect(host arrays)`` -> the reference."""

    family: OpSpec
    inputs: Callable
    call: Callable
    expect: Callable
    in_place: tuple[int, ...] = ()  # indices of inputs the call overwrites (re-uploaded before checking)

    @property
    def name(self) -> str:
        return self.family.name

    def run(self, params: dict, args: tuple):
        with forced(self.family, params):
            return self.call(*args)

    def check(self, out: np.ndarray, expected: np.ndarray, dtype, k: int = 1) -> bool:
        if out.shape != expected.shape:
            return False
        if np.dtype(dtype).kind in "iub":
            return bool(np.array_equal(out, expected))
        if not np.all(np.isfinite(out)):
            return False
        return rel_error(out, expected) <= tolerance(self.name, dtype, k) * 4


_user_targets: dict[str, Target] = {}


def target(kernel) -> Target:
    """The Target for a library kernel name, a declared kernel's name, or a Target itself."""
    if isinstance(kernel, Target):
        return kernel
    if isinstance(kernel, UserKernel):
        return kernel.target
    if kernel in _user_targets:
        return _user_targets[kernel]
    spec = registry.library_op(kernel)  # a library op: its spec's sample inputs, call and reference
    return Target(spec, spec.inputs, spec.sample_call, spec.sample_expect, in_place=spec.in_place)


# ---- users' own kernels -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class UserFamily(OpSpec):
    """An OpSpec whose source text is given, not a file of the library."""

    text: str = ""

    def source_text(self) -> str:
        return self.text


@dataclass
class UserKernel:
    """A user kernel declared tunable (see :func:`declare`). ``config(device, problem, dtype)`` gives
    the tuned params (tuning database, else the defaults); ``launch(device, problem, *args)`` runs it."""

    family: OpSpec
    entry: str
    grid: Callable  # (problem, params) -> (global_size, local_size)
    target: Target

    def config(self, device, problem: dict, dtype=np.float32) -> dict:
        return resolve(self.family, device, lookup(dtype), problem)[0]

    def launch(self, device, problem: dict, *args, dtype=np.float32):
        dt = lookup(dtype)
        key = (device, dt.name, tuple(problem[p] for p in self.family.problem))
        kernel, config = plan(self.family, key, lambda: self._steps(device, dt, problem))
        kernel(*args, config=config)

    def _steps(self, device, dt, problem: dict) -> tuple:
        params, kernels = resolve(self.family, device, dt, problem)
        g, loc = self.grid(problem, params)
        return kernels[self.entry], LaunchConfig(tuple(g), tuple(loc) if loc else None)


def declare(name: str, source: str, *, entry: str | None = None, tunables: dict, problem: tuple[str, ...],
            grid: Callable, inputs: Callable, reference: Callable, output: int, scalars: Callable | None = None,
            restrictions: tuple[str, ...] = (), dtypes: tuple[str, ...] = ("float32",)) -> UserKernel:
    """Declare a tunable kernel of your own.

    ``tunables``: ``{"WG": ((32, 64, 128), 64), ...}`` (values, default), passed as ``-D`` macros;
    ``restrictions``: Python expressions over them, the problem sizes and ``max_work_group_size``,
    ``local_mem_size``; ``grid(problem, params) -> (global, local)``; ``inputs(problem, dtype, rng)``
    -> host arrays (the kernel's buffer arguments, in order); ``scalars(problem)`` -> the scalar
    arguments that precede them; ``output``: index of the input the kernel writes;
    ``reference(*inputs)`` -> what that output must hold.

    >>> k = isthmus.tune.declare("scale", SRC, tunables={"WG": ((32, 64, 128), 64)}, problem=("n",),
    ...     grid=lambda p, c: ((-(-p["n"] // c["WG"]) * c["WG"],), (c["WG"],)),
    ...     inputs=lambda p, dt, rng: (rng.random(p["n"]).astype(dt), np.zeros(p["n"], dt)),
    ...     scalars=lambda p: (p["n"],), output=1, reference=lambda x, y: 2 * x)
    >>> isthmus.tune(k, problem={"n": 4096}, budget=3)
    """
    family = UserFamily(name=name, source=f"<{name}>", entries=(entry or name,), dtypes=tuple(dtypes), library=False,
                        tunables=tuple(Tunable(k, tuple(v), d) for k, (v, d) in tunables.items()),
                        problem=tuple(problem), restrictions=tuple(restrictions), text=source)
    problem_now: dict = {}  # the problem of the inputs made last: the tuner's call launches for it

    def call(*bufs):
        kernel.launch(bufs[0].device, problem_now, *(scalars(problem_now) if scalars else ()), *bufs,
                      dtype=bufs[0].dtype)
        return bufs[output]

    def make_inputs(p, dt, rng):
        problem_now.update(p)
        return inputs(p, dt, rng)

    kernel = UserKernel(family, entry or name, grid, Target(family, make_inputs, call, reference, in_place=(output,)))
    register(family)
    _user_targets[name] = kernel.target
    return kernel


__all__ = ["OPS", "Target", "UserKernel", "declare", "target"]
