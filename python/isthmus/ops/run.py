"""The one run of a declared single-launch op: what ``isthmus.ops.<name>`` is for an op whose spec
declares its arguments, output rule and launch instead of writing a ``run``.

A call: binds the arguments (positional or by name, scalars' defaults); checks the tensors (open
isthmus Buffers on one device with one dtype); plans (:func:`.resolve.plan`, keyed by device,
dtype and the tensors' shapes: on a new key it computes the problem sizes from their sources,
checks the ranks and shape links, resolves the config and packs the launch); takes the output
(a new buffer, ``out=`` checked and disjoint from the inputs or exactly the one it may alias, or
the tensor it writes in place, disjoint from the others); converts the scalars (:func:`.checks.scalar`:
an error naming the argument);
launches; closes a new result if the launch raises (a scalar the kernel refuses).

The common call does only the cheap tests; every unusual argument goes to :mod:`.checks`, which
finds what is wrong and says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..buffer import Buffer
from ..errors import InvalidArgumentError
from . import checks
from .resolve import forcing, memo, plan, resolve

if TYPE_CHECKING:  # pragma: no cover
    from .spec import OpSpec

_PACK = {"int": np.int32, "long": np.int64}


# ---- what a declared op says (ops/spec.py gives these names to spec files) ---------------------
class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # a Scalar without a default


@dataclass(frozen=True)
class Tensor:
    """A buffer argument. ``ndim``: the rank it must have (None: any); ``min_ndim``: the least rank
    it may have. ``shape``: its shape as problem names (or numbers), a link to the sizes other
    arguments give (``("cols",)``: as many elements as x has columns), or another tensor's name
    (``"x"``: x's shape, whatever its rank); ``size``: its element count as a problem name (axpy's
    y: ``"n"``).

    ``optional``: the call may omit it (default None; not the first tensor, not a problem size's
    source); the kernel is compiled with ``-DHAS_<NAME>=1`` when it is given, ``0`` when not (the
    tuned config is shared), and the first tensor stands in for it at the launch (never read).
    ``written``: the op writes it in place besides its result (rmsnorm's ``residual += x``): it
    shares no memory with the other tensors nor with ``out``."""
    name: str
    ndim: int | None = None
    shape: tuple | str | None = None
    size: str | None = None
    min_ndim: int | None = None
    optional: bool = False
    written: bool = False

    @property
    def define(self) -> str:
        """The -D macro that says whether an optional tensor was given."""
        return f"HAS_{self.name.upper()}"


@dataclass(frozen=True)
class Scalar:
    """A number argument, packed as the kernel's parameter type. ``sample``: its value in the
    spec's sample calls (tests, tuner, bench); the default where it has one."""
    name: str
    default: Any = REQUIRED
    sample: Any = REQUIRED
    minimum: float | None = None  # it must be a finite number >= this (rmsnorm's eps: 0)

    @property
    def sample_value(self) -> Any:
        return self.default if self.sample is REQUIRED else self.sample


@dataclass(frozen=True)
class Output:
    """The output rule. ``like``: the tensor whose device and dtype the result has (and its shape,
    unless ``shape`` gives it from the problem). ``in_place``: the op writes that tensor and
    returns it (no ``out=``), sharing no memory with the other tensors (:func:`.checks.disjoint`).
    Otherwise the result is a new buffer or ``out=``; ``alias``: ``out`` may be ``like`` itself,
    exactly (in place through ``out=``; a part of it is an error: :func:`.checks.in_place`); any
    other overlap with an input is an error (:func:`.checks.disjoint`)."""
    like: str
    shape: Callable[[dict], tuple] | None = None
    in_place: str | None = None
    alias: bool = False


@dataclass(frozen=True)
class Launch:
    """The one kernel launch: ``entry`` (a name, or problem -> name), ``grid`` ((problem, params)
    -> (global, local)) and the kernel's arguments in order: ``"n:long"`` / ``"rows:int"`` (a
    problem size packed as that C type), a scalar's name, a tensor's name, ``"out"``."""
    entry: str | Callable[[dict], str]
    grid: Callable[[dict, dict], tuple]
    args: tuple[str, ...]


# ---- the run written from it --------------------------------------------------------------


def _sources(spec: OpSpec, tensors: list[str]) -> Callable[..., dict]:
    """(the tensors, by position) -> the problem sizes, from the spec's ``sources``."""
    body = ", ".join(f"{name!r}: int({expr})" for name, expr in spec.sources)
    return eval(f"lambda {', '.join(tensors)}: {{{body}}}", {"__builtins__": {"int": int}})


def _check_ranks(spec: OpSpec, named: dict) -> None:
    for a in spec.args:
        if not isinstance(a, Tensor) or named[a.name] is None:
            continue
        rank = len(named[a.name].shape)
        if a.ndim is not None and rank != a.ndim:
            raise InvalidArgumentError(f"{spec.name}: {a.name} must be {a.ndim}-D, got shape {named[a.name].shape}")
        if a.min_ndim is not None and rank < a.min_ndim:
            raise InvalidArgumentError(f"{spec.name}: {a.name} must have at least {a.min_ndim} dimension"
                                       f"{'s' if a.min_ndim > 1 else ''}, got shape {named[a.name].shape}")


def _check_links(spec: OpSpec, problem: dict, named: dict) -> None:
    """Shape links of the tensors (checked once per key: the key holds every shape)."""
    where = dict(spec.sources)
    for a in spec.args:
        if not isinstance(a, Tensor) or named[a.name] is None:
            continue
        t = named[a.name]
        if a.size is not None and t.size != problem[a.size]:
            raise InvalidArgumentError(f"{spec.name}: {a.name} has {t.size} elements; it must have {a.size} = "
                                       f"{where.get(a.size, a.size)} = {problem[a.size]}")
        if isinstance(a.shape, str):
            if t.shape != named[a.shape].shape:
                raise InvalidArgumentError(f"{spec.name}: {a.name} has shape {t.shape}; it must have {a.shape}'s shape "
                                           f"{named[a.shape].shape}")
        elif a.shape is not None:
            want = tuple(problem[d] if isinstance(d, str) else d for d in a.shape)
            if t.shape != want:
                dims = ", ".join(d if isinstance(d, str) else str(d) for d in a.shape)
                raise InvalidArgumentError(f"{spec.name}: {a.name} has shape {t.shape}; it must be ({dims}) = {want}")


def _make(spec: OpSpec, tensors: list[str], sources: Callable, dev, dt, values: tuple) -> tuple:
    """The launch steps for one key: (kernel, global, local, the packed problem sizes in launch
    order, result shape, result bytes, whether the problem is empty, and the scalars' quick test:
    lowest, highest, the class besides int a number may have). ``values``: the tensors.
    Argument names are the function's locals; its own locals start with ``_``."""
    named = dict(zip(tensors, values))
    _check_ranks(spec, named)
    problem = sources(*values)
    _check_links(spec, problem, named)
    given = tuple((a.define, int(named[a.name] is not None)) for a in spec.args if isinstance(a, Tensor) and a.optional)
    params, kernels = resolve(spec, dev, dt, {k: max(v, 1) for k, v in problem.items()}, given)
    launch = spec.launch
    entry = launch.entry if isinstance(launch.entry, str) else launch.entry(problem)
    sizes = tuple(_PACK[a.split(":")[1]](problem[a.split(":")[0]]) for a in launch.args if ":" in a)
    shape = named[spec.out.like].shape if spec.out.shape is None else tuple(spec.out.shape(problem))
    nbytes = dt.np.itemsize
    for s in shape:
        nbytes *= s
    # the scalars' quick test (checks.scalar's): a Python number of these classes within [low, high]
    # is taken as it is; any other value goes to checks.scalar (no quick test: an empty range)
    fast = checks.scalar_fast(dt.acc) or (None, 1, 0, False)
    return (kernels[entry], *launch.grid(problem, params), sizes, shape, nbytes, 0 in problem.values(),
            fast[1], fast[2], float if fast[3] else int)


def _apart(out: str, others: list[str], optional: list[str]) -> str:
    """The inline pre-test of :func:`.checks.disjoint` / :func:`.checks.in_place`: whether ``out``'s
    byte range meets one of ``others``' (as addresses: CUDA's pointers; OpenCL's handles are equal
    for one allocation, so their ranges meet too). False: they share nothing, and the check is not
    called; True: the check decides."""
    tests = [f"{out}._ptr < {x}._ptr + {x}.nbytes and {x}._ptr < {out}._ptr + {out}.nbytes" for x in others]
    return " or ".join(f"({x} is not None and {test})" if x in optional else f"({test})"
                       for x, test in zip(others, tests))


def declared(spec: OpSpec) -> Callable:
    """The public function of a declared op (``spec.args``, ``spec.out``, ``spec.launch``), written
    out as Python source for its arguments (as :mod:`dataclasses` writes ``__init__``): a real
    signature, and no loop or dict on the call path, so a declared op costs no more host time than
    the hand-written run it replaced."""
    name, out_rule, launch = spec.name, spec.out, spec.launch
    params = [a.name for a in spec.args]
    tensors = [a.name for a in spec.args if isinstance(a, Tensor)]
    scalars = [a for a in spec.args if isinstance(a, Scalar)]
    bad = [a for a in launch.args if ":" not in a and a not in params and a != "out"]
    if bad or any(not n.isidentifier() or n.startswith("_") or n == "out" for n in params):
        raise InvalidArgumentError(f"{name}: launch arguments {bad} are not declared, or argument names are not "
                                   f"identifiers: {params}")
    optional = [a.name for a in spec.args if isinstance(a, Tensor) and a.optional]
    written = [a.name for a in spec.args if isinstance(a, Tensor) and a.written]
    if tensors[0] in optional:
        raise InvalidArgumentError(f"{name}: the first tensor ({tensors[0]}) cannot be optional")
    defaults = [a.name in optional or (isinstance(a, Scalar) and a.default is not REQUIRED) for a in spec.args]
    if any(d and not later for i, d in enumerate(defaults) for later in defaults[i + 1:]):
        raise InvalidArgumentError(f"{name}: an argument without a default follows one with a default: {params}")
    first, like = tensors[0], out_rule.like
    sources = _sources(spec, tensors)
    steps = memo(spec)
    ns = {"Buffer": Buffer, "_buffer": checks.buffer, "_like": checks.like, "_dtype": checks.dtype,
          "_output": checks.output, "_disjoint": checks.disjoint, "_in_place": checks.in_place,
          "_scalar": checks.scalar, "_minimum": checks.minimum, "_inf": float("inf"), "_forcing": forcing,
          "_plan": plan, "_alloc": Buffer._allocate,
          "_spec": spec, "_memo": steps, "_table": steps.table, "_touch": steps.table.move_to_end, "_make": _make,
          "_tensors": tensors, "_sources": sources}
    sig = []
    for a in spec.args:
        if isinstance(a, Scalar) and a.default is not REQUIRED:
            ns[f"_default_{a.name}"] = a.default
            sig.append(f"{a.name}=_default_{a.name}")
        elif a.name in optional:
            sig.append(f"{a.name}=None")
        else:
            sig.append(a.name)
    if out_rule.in_place is None:
        sig.append("out=None")
    t = tensors
    lines = [f"def {name}({', '.join(sig)}):",
             f"    if {first}.__class__ is not Buffer or {first}._dt is None:",
             f"        {first} = _buffer({name!r}, {first!r}, {first})",
             f"    _dt = {first}._dt or _dtype({first})",
             f"    _dev = {first}.device"]
    for other in t[1:]:
        test = (f"{other}.__class__ is not Buffer or {other}._dt is not _dt or {other}.device is not _dev")
        lines += [f"    if {f'{other} is not None and ({test})' if other in optional else test}:",
                  f"        _like({name!r}, {first}, {other!r}, _buffer({name!r}, {other!r}, {other}))"]
    # the tensors it writes in place (the kernel reads the others while it writes them)
    for w in ([out_rule.in_place] if out_rule.in_place is not None else []) + written:
        others = [x for x in t if x != w]
        if others:
            test = _apart(w, others, optional)
            lines += [f"    if {f'{w} is not None and ' if w in optional else ''}({test}):",
                      f"        _disjoint({name!r}, {w}, {w!r}, {', '.join(f'{x}={x}' for x in others)})"]
    shapes = [f"(None if {x} is None else {x}.shape)" if x in optional else f"{x}.shape" for x in t]
    lines += [f"    _key = (_dev, _dt.name, {', '.join(shapes)})",
              "    try:",  # (the memo's get, inline: a hit is the common call)
              "        _found = _table[_key]",
              "        _touch(_key)",
              "    except KeyError:",
              "        _found = None",
              "    if _found is None or _forcing:",
              "        _found = _plan(_spec, _key, lambda: _make(_spec, _tensors, _sources, _dev, _dt, "
              f"({', '.join(t)},)), _memo)",
              "    _kernel, _g, _loc, _sizes, _shape, _nbytes, _empty, _low, _high, _number = _found"]
    # (after the plan, which refuses a dtype the op does not take before its scalars are converted to it)
    for a in scalars:  # (checks.scalar: a Python number in range is taken as it is; its quick test inline)
        c = f"{a.name}.__class__"
        lines += [f"    if not (({c} is int or {c} is _number) and _low <= {a.name} <= _high):",
                  f"        {a.name} = _scalar({name!r}, {a.name!r}, {a.name}, _dt.acc)"]
        if a.minimum is not None:
            lines += [f"    if not {a.minimum!r} <= {a.name} < _inf:",
                      f"        _minimum({name!r}, {a.name!r}, {a.name}, {a.minimum!r})"]
    if out_rule.in_place is not None:
        lines.append(f"    _y = {out_rule.in_place}")
    else:
        # (checks.output's own first test, inline: an out of the right device, dtype and shape)
        # (a new result: like's device and dtype, which every tensor shares)
        apart = [x for x in t if x != like or not out_rule.alias]
        lines += ["    if out is None:",
                  "        _y = _alloc(_dev, _shape, _dt, _nbytes)",
                  "    else:",
                  "        if out.__class__ is Buffer and out._dt is _dt and out.device is _dev and out.shape == _shape:",
                  "            _y = out",
                  "        else:",
                  f"            _y = _output({name!r}, out, {like}, _shape, _nbytes)",
                  *([f"        if _y is not {like} and ({_apart('_y', [like], [])}):",
                     f"            _in_place({name!r}, _y, {like!r}, {like})"] if out_rule.alias else []),
                  *([f"        if {_apart('_y', apart, optional)}:",
                     f"            _disjoint({name!r}, _y, {', '.join(f'{x}={x}' for x in apart)})"] if apart else [])]
    sizes = iter(range(len(launch.args)))
    # (an optional tensor not given: the first tensor stands in, never read: its HAS_ define is 0)
    values = [f"_sizes[{next(sizes)}]" if ":" in a else "_y" if a == "out" else
              f"({first} if {a} is None else {a})" if a in optional else a for a in launch.args]
    lines += ["    if _empty:",
              "        return _y"]
    call = f"_dev.launch(_kernel, _g, _loc, [{', '.join(values)}])"
    if out_rule.in_place is not None or not scalars:  # (nothing the launch converts can refuse)
        lines.append(f"    {call}")
    else:
        lines += ["    try:",
                  f"        {call}",
                  "    except Exception:",
                  "        if _y is not out:  # (a scalar refused: the result is no one's)",
                  "            _y.close()",
                  "        raise"]
    lines.append("    return _y")
    exec("\n".join(lines), ns)  # noqa: S102 - the op's own declaration, not input
    run = ns[name]
    run.__module__ = "isthmus.ops"
    run.__doc__ = spec.doc or spec.summary
    run.__source__ = "\n".join(lines)  # (what was written, for a reader)
    run._declared = True  # (written from a spec: a copy of the spec writes its own)
    return run


__all__ = ["declared"]
