"""The arguments of a tuning run, checked before anything runs, with hints in the caller's syntax.

The same checks serve ``isthmus.tune(...)`` (hints as Python keyword arguments:
``problem={"m": 1024, "n": 1024, "k": 1024}``), ``isthmus tune`` (the flags the user typed:
``--size m=1024 n=1024 k=1024``) and Java's ``Tuner`` (its builder calls: ``.size("m", 1024)``),
so each caller's message says what to write where the user writes it.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from . import strategies

DEFAULT_BUDGET = 50  # configs a run evaluates when no budget is given (a gemm space holds thousands)


@dataclass(frozen=True)
class Syntax:
    """How a setting is written by the caller: ``{"problem": ..., "budget": ...}`` templates."""

    name: str
    size: str  # one size: {name}, {value}
    sizes: str  # the sizes joined: {sizes}
    join: str
    setting: str  # one setting: {name}, {value}
    text: str  # a text value: {value}
    strategy: str  # {value}: a strategy name

    def problem(self, names, values: dict | None = None) -> str:
        values = values or {}
        return self.sizes.format(sizes=self.join.join(self.size.format(name=n, value=values.get(n, 1024))
                                                      for n in names))

    def set(self, name: str, value) -> str:
        if name == "strategy":
            return self.strategy.format(value=value, upper=str(value).upper())
        shown = self.text.format(value=value) if isinstance(value, str) else (
            f"{value:g}" if isinstance(value, float) else value)
        return self.setting.format(name=name, value=shown)


PYTHON = Syntax("python", size='"{name}": {value}', sizes="problem={{{sizes}}}", join=", ", setting="{name}={value}",
                text='"{value}"', strategy='strategy="{value}"')
CLI = Syntax("cli", size="{name}={value}", sizes="--size {sizes}", join=" ", setting="--{name} {value}",
             text="{value}", strategy="--strategy {value}")
JAVA = Syntax("java", size='.size("{name}", {value})', sizes="{sizes}", join="", setting=".{name}({value})",
              text='"{value}"', strategy=".strategy(Strategy.{upper})")


def _example(family, given=None) -> dict:
    """The sizes an error's example shows: what the user gave that is usable, the rest from the
    family's standard problem (its GPU sample: attention's heads=32 head_dim=128, not 1024 each),
    1024 where a declared kernel has none."""
    standard = getattr(getattr(family, "sizes", None), "gpu", None)
    out = dict(standard) if isinstance(standard, dict) else {}
    for name, value in (given or {}).items():
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
            out[name] = int(value)
    return out


def problem(family, given, syntax: Syntax = PYTHON) -> dict:
    """``given`` as {size name: int} in the family's order, or InvalidArgumentError: not a mapping,
    an unknown or missing name, a value that is not an integer of at least 1."""
    what = f"tune {family.name}"
    example = syntax.problem(family.problem, _example(family))
    names = ", ".join(family.problem)
    if given is None or not hasattr(given, "items"):
        raise InvalidArgumentError(f"{what}: give the problem sizes {names}, e.g. {example}")
    unknown = [str(k) for k in given if k not in family.problem]
    if unknown:
        raise InvalidArgumentError(f"{what}: unknown size {', '.join(map(repr, unknown))}; {family.name}'s sizes are "
                                   f"{names}, e.g. {syntax.problem(family.problem, _example(family, given))}")
    missing = [p for p in family.problem if p not in given]
    if missing:
        raise InvalidArgumentError(f"{what}: missing size {', '.join(missing)}; {family.name}'s sizes are {names}, "
                                   f"e.g. {syntax.problem(family.problem, _example(family, given))}")
    out = {}
    for p in family.problem:
        v = given[p]
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise InvalidArgumentError(f"{what}: size {p} must be an integer, got {v!r}; e.g. {example}")
        if v < 1:
            raise InvalidArgumentError(f"{what}: size {p} must be at least 1, got {syntax.problem((p,), {p: v})}; "
                                       f"e.g. {syntax.problem(family.problem, _example(family, given))}")
        out[p] = int(v)
    return out


def budget(evaluations, seconds, syntax: Syntax = PYTHON) -> tuple[int | None, float | None]:
    """(evaluations, seconds) checked: each None or positive (None evaluations: the default budget)."""
    if evaluations is not None and (not isinstance(evaluations, numbers.Integral) or isinstance(evaluations, bool)
                                    or evaluations < 1):
        raise InvalidArgumentError(f"tune: the budget is how many configs to evaluate, at least 1; got "
                                   f"{syntax.set('budget', evaluations)} (leave it out for {DEFAULT_BUDGET}, or "
                                   f"e.g. {syntax.set('budget', 200)})")
    if seconds is not None and (not isinstance(seconds, numbers.Real) or isinstance(seconds, bool)
                                or not math.isfinite(seconds) or seconds <= 0):
        raise InvalidArgumentError(f"tune: a time limit must be a number of seconds above 0; got "
                                   f"{syntax.set('seconds', seconds)} (leave it out for none, or e.g. "
                                   f"{syntax.set('seconds', 600)})")
    return (None if evaluations is None else int(evaluations)), (None if seconds is None else float(seconds))


def search(strategy, seed, options, syntax: Syntax = PYTHON) -> tuple[str, int, dict]:
    """(strategy, seed, its options with defaults) checked."""
    if not isinstance(strategy, str) or strategy not in strategies.NAMES:
        raise InvalidArgumentError(f"tune: no tuning strategy {strategy!r}; choose one of "
                                   f"{', '.join(strategies.NAMES)}, e.g. {syntax.set('strategy', 'anneal')}")
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        raise InvalidArgumentError(f"tune: the seed must be an integer, got {seed!r}; e.g. {syntax.set('seed', 0)}")
    module = strategies.get(strategy)
    return strategy, int(seed), strategies.options(module, options)
