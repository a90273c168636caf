"""What the tuner measures: a kernel with its inputs, its call and its reference.

Library ops are measured through their own call (the function users call, with the dtype and
variant flags of the tuning run) with the candidate config forced for the family that call
launches, so tuning measures exactly the launches users get. Users' own kernels are declared with
:func:`declare` (source, tunables, restrictions, problem sizes, grid rule, inputs, reference):
registered as op specs, they are tuned, stored and looked up like the library's.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..dtypes import lookup
from ..errors import InvalidArgumentError
from ..launch import LaunchConfig
from ..ops import registry
from ..ops.registry import OPS
from ..ops.resolve import forced, plan, resolve
from ..ops.spec import OpSpec, Tunable
from ..ops.workloads import tolerance
from .space import register


@dataclass
class Target:
    """What one tuning run measures: ``family`` (the kernels whose config is tuned and stored: the
    op's family for the dtype, its variant for the flags); ``inputs(problem, dtype, rng)`` -> host
    arrays; ``call(device args)`` -> the result Buffer (the op's own call, run with the config in
    force); ``expect(host arrays)`` -> the reference; ``op``: the op's name (its tolerance);
    ``judge(out, expected, host arrays)`` -> the error of a result (the op's
    :meth:`~isthmus.ops.spec.OpSpec.result_error` with the run's flags; None: the family's)."""

    family: OpSpec
    inputs: Callable
    call: Callable
    expect: Callable
    in_place: tuple[int, ...] = ()  # indices of inputs the call overwrites (re-uploaded before checking)
    op: str = ""
    judge: Callable | None = None

    @property
    def name(self) -> str:
        return self.family.name

    def run(self, params: dict, args: tuple):
        with forced(self.family, params):
            return self.call(*args)

    def check(self, out: np.ndarray, expected: np.ndarray, dtype, k: int = 1, host: tuple = ()) -> bool:
        """Whether a config's result ``out`` matches the reference's ``expected`` for the host inputs
        ``host`` (the run's first input set; without them a result is judged against ``expected``
        alone: a sample op's token at a boundary of its distribution must then be the reference's)."""
        if out.shape != expected.shape:
            return False
        dtype = np.dtype(dtype)
        error = (self.judge or self.family.result_error)(out, expected, host)
        if dtype.kind in "iub":
            return error == 0
        if not np.all(np.isfinite(out)):
            return False
        # 16-bit floats are judged in float16's units, bfloat16 (8 bits of mantissa, not 11) with 8 of them
        wide = dtype.itemsize == 2
        bound = tolerance(self.op or self.name, np.float16 if wide else dtype, k) * (8 if dtype.name == "bfloat16" else 1)
        return error <= bound * 4


def target(kernel, dtype=None, problem: dict | None = None, **flags) -> Target:
    """The Target for an op name (a library op or a kernel declared with :func:`declare`) or a
    declared kernel, on ``dtype`` with the op's variant ``flags`` (``trans_b=True``): it measures
    the family and variant that the op's own call launches for them (gemm on bfloat16 with
    ``trans_b``: gemm_mma compiled with ``TRANS_B=1``), through that very call. ``problem``: the
    sizes a declared kernel is launched for (a library op reads them from its inputs)."""
    if isinstance(kernel, Target):
        return kernel
    spec = _spec(kernel.family.name if isinstance(kernel, UserKernel) else kernel)
    known = [f.name for f in spec.variants]
    unknown = sorted(set(flags) - set(known))
    if unknown:  # (a misspelt argument of tune() lands here too)
        raise InvalidArgumentError(f"tune {spec.name}: {', '.join(map(repr, unknown))} is not an argument of tune() nor a "
                                   f"variant flag of {spec.name}"
                                   + (f" (its flags: {', '.join(known)})" if known else " (it has no variant flags)"))
    family = spec.family(None if dtype is None else lookup(dtype)).variant(**flags)
    if isinstance(spec, UserFamily):  # its sizes are not its buffers' shapes: the call is given them
        call, expect = functools.partial(spec.call, problem=dict(problem or {})), spec.reference
    else:
        call, expect = functools.partial(spec.sample_call, **flags), functools.partial(spec.sample_expect, **flags)
    return Target(family, functools.partial(spec.inputs, **flags), call, expect,
                  in_place=spec.in_place, op=spec.name, judge=functools.partial(spec.result_error, **flags))


def _spec(name: str) -> OpSpec:
    """The registered op (library or declared) that ``name`` names, or an error naming what can be tuned."""
    spec = registry.get(name) if isinstance(name, str) else None
    if spec is not None and spec.inputs is not None and spec.sample_call is not None:
        return spec
    owner = next((op for op in OPS.values() for _, fam in op.families if fam is spec), None)
    if owner is not None:
        dtypes = [dt for dt, fam in owner.families if fam is spec]
        raise InvalidArgumentError(f"{name} is {owner.name}'s family for {' and '.join(dtypes)}: tune it as "
                                   f"{owner.name} with dtype={dtypes[0]!r} (isthmus tune {owner.name} --dtype {dtypes[0]})")
    declared = sorted(n for n in registry.names() if isinstance(registry.get(n), UserFamily))
    raise InvalidArgumentError(f"no kernel {name!r} to tune; the library has {', '.join(OPS)}"
                               + (f"; declared in this process: {', '.join(declared)}" if declared else
                                  "; a kernel of your own is declared with isthmus.tune.declare first"))


# ---- users' own kernels -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class UserFamily(OpSpec):
    """The spec of a kernel declared with :func:`declare`: its source text is given, not a file of
    the library; ``call(*buffers, problem=...)`` launches it for the tuner. It has no ``run``: a
    tunable kernel, launched with :meth:`UserKernel.launch` for a problem, not an op (Java's
    ``Ops.call`` and ``Device.kernel(name)`` refuse it)."""

    text: str = ""

    def source_text(self) -> str:
        return self.text


@dataclass
class UserKernel:
    """A user kernel declared tunable (see :func:`declare`); ``family`` is its registered spec.
    ``config(device, problem, dtype)`` gives the tuned params (tuning database, else the defaults);
    ``launch(device, problem, *args)`` runs it with them."""

    entry: str
    grid: Callable  # (problem, params) -> (global_size, local_size)
    scalars: Callable | None
    output: int
    family: UserFamily | None = None

    @property
    def name(self) -> str:
        return self.family.name

    def config(self, device, problem: dict, dtype=np.float32) -> dict:
        return resolve(self.family, device, lookup(dtype), problem)[0]

    def launch(self, device, problem: dict, *args, dtype=np.float32):
        dt = lookup(dtype)
        key = (device, dt.name, tuple(problem[p] for p in self.family.problem))
        kernel, config = plan(self.family, key, lambda: self._steps(device, dt, problem))
        kernel(*args, config=config)

    def call(self, *bufs, problem: dict):
        """The kernel on its buffer arguments for ``problem`` (scalars from ``scalars(problem)``): the output."""
        self.launch(bufs[0].device, problem, *(self.scalars(problem) if self.scalars else ()), *bufs,
                    dtype=bufs[0].dtype)
        return bufs[self.output]

    def _steps(self, device, dt, problem: dict) -> tuple:
        params, kernels = resolve(self.family, device, dt, problem)
        g, loc = self.grid(problem, params)
        return kernels[self.entry], LaunchConfig(tuple(g), tuple(loc) if loc else None)


def declare(name: str, source: str, *, entry: str | None = None, tunables: dict, problem: tuple[str, ...],
            grid: Callable, inputs: Callable, reference: Callable, output: int, scalars: Callable | None = None,
            restrictions: tuple[str, ...] = (), dtypes: tuple[str, ...] = ("float32",)) -> UserKernel:
    """Declare a kernel of your own tunable: register it under ``name`` with the library's ops, so
    that ``isthmus.tune(name, ...)`` (or ``isthmus tune NAME --declare FILE.py``) tunes it, its
    configs are stored in the tuning database under ``name`` (``isthmus db show/export/import``
    handle them like the library's), and the returned kernel's ``launch`` uses the tuned config.

    - ``source``: OpenCL C; ``entry``: its kernel function (default: ``name``);
    - ``tunables``: ``{"WG": ((32, 64, 128), 64), ...}`` (values, default), passed as ``-D`` macros;
    - ``restrictions``: Python expressions over the tunables, the problem sizes and the device's
      ``max_work_group_size``, ``local_mem_size``: a config that breaks one is never tried or used;
    - ``problem``: the names of its problem sizes (``("n",)``): the tuning key's size bucket;
    - ``grid(problem, params) -> (global, local)``: the launch grid for a config;
    - ``inputs(problem, dtype, rng)`` -> host arrays (the kernel's buffer arguments, in order);
      ``scalars(problem)`` -> the scalar arguments that precede them;
    - ``output``: index of the buffer the kernel writes; ``reference(*inputs)`` -> what it must hold
      (every config is checked against it before it is timed);
    - ``dtypes``: the dtypes it may be tuned for.

    Declaring a name again replaces the declaration (a library op's name is an error). A database
    holding configs of a kernel that this process has not declared keeps them (``db show`` lists
    them, ``db import`` stores them); they are used once the kernel is declared with the same source.

    >>> k = isthmus.tune.declare("scale", SRC, tunables={"WG": ((32, 64, 128), 64)}, problem=("n",),
    ...     grid=lambda p, c: ((-(-p["n"] // c["WG"]) * c["WG"],), (c["WG"],)),
    ...     inputs=lambda p, dt, rng: (rng.random(p["n"]).astype(dt), np.zeros(p["n"], dt)),
    ...     scalars=lambda p: (p["n"],), output=1, reference=lambda x, y: 2 * x)
    >>> isthmus.tune(k, problem={"n": 4096}, budget=3)     # or isthmus.tune("scale", ...)
    >>> k.launch(dev, {"n": 4096}, 4096, x, y)             # scalars, then buffers; the tuned config
    """
    kernel = UserKernel(entry or name, grid, scalars, output)
    kernel.family = UserFamily(
        name=name, source=f"<{name}>", entries=(entry or name,), dtypes=tuple(dtypes), library=False,
        tunables=tuple(Tunable(k, tuple(v), d) for k, (v, d) in tunables.items()), problem=tuple(problem),
        restrictions=tuple(restrictions), text=source, call=kernel.call,
        inputs=inputs, reference=reference, in_place=(output,),
        summary="declared with isthmus.tune.declare")
    register(kernel.family)
    return kernel


__all__ = ["OPS", "Target", "UserKernel", "declare", "target"]
