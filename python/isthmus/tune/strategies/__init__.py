"""Search strategies. Each is a module with an ``OPTIONS`` table ``{name: (default, doc)}`` and one
entry point ``tune(space, cost, rng, options)``: it asks ``cost(config)`` for the time of configs
(``inf`` for a config that failed) until the cost raises :class:`BudgetExhausted`, or returns when
it has nothing left to try. The cost (:class:`isthmus.tune.runner.Cost`) measures each distinct
config once against the budget; asking again is free, and ``cost.seen`` holds the keys
(``Space.key``) of the configs measured so far.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ...errors import InvalidArgumentError

# name -> module (imported on first use)
NAMES = {"exhaustive": "exhaustive", "random": "random_sample", "anneal": "anneal", "genetic": "genetic"}


class BudgetExhausted(Exception):
    """Raised by the cost function when the evaluation or time budget is spent (ends the search)."""


def get(name: str) -> ModuleType:
    try:
        module = NAMES[name]
    except KeyError:
        raise InvalidArgumentError(f"no tuning strategy {name!r}; choose one of {', '.join(NAMES)}") from None
    return importlib.import_module(f"{__name__}.{module}")


def options(module: ModuleType, given: dict | None) -> dict:
    """The strategy's options with ``given`` applied; an unknown option is an error."""
    if given is not None and not hasattr(given, "items"):
        raise InvalidArgumentError(f"strategy options must be a dict of option: value, got {given!r}")
    given = dict(given or {})
    unknown = set(given) - set(module.OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"strategy {module.__name__.rsplit('.', 1)[-1]} has no option(s) {sorted(unknown)}; "
                         f"it has {sorted(module.OPTIONS)}")
    return {k: given.get(k, default) for k, (default, _doc) in module.OPTIONS.items()}
