"""What a call launches: the config (tuning database, else the spec's rule and defaults), the
compiled kernels, and the op's launch steps made from them, in one memo.

``plan(spec, key, make)`` is the hot path of every op: ``key`` is what the launches depend on
(device, dtype, shapes, flags), ``make()`` resolves the config and builds the steps (grid, kernels,
scalar arguments) once per key. The memo is resolve's, one bounded LRU per spec (the spec is an
immutable value). ``resolve`` gives the config and kernels for a problem; the tuner forces a
candidate config for one context (:func:`forced`); ``forget_resolved`` (a tuning database
changed) empties every memo.
"""
from __future__ import annotations

import contextvars
import math
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable

from ..dtypes import DType
from ..errors import InvalidArgumentError
from ..kernel import Kernel
from ..memo import BoundedMemo

if TYPE_CHECKING:  # pragma: no cover
    from .spec import OpSpec

_lock = threading.Lock()
_generation = 0  # bumped by forget_resolved(): what was made before it must not be stored after it
_MEMO_MAX = 4096  # distinct keys per spec kept (least recently used dropped first)
# spec (hashed by identity) -> its launch steps by call key
_plans: dict[OpSpec, BoundedMemo] = {}
# (spec, device, dtype, problem) -> tuned params or None: the tuning database (isthmus/__init__
# plugs isthmus.tune in; ops import nothing of the tuner)
config_source: list[Callable] = []
# (spec, params) that resolve() returns in this context: how the tuner launches a candidate config
# through the op's own run() without touching what other threads resolve
_forced: contextvars.ContextVar = contextvars.ContextVar("isthmus_forced_config", default=None)
# one entry per forced() context open in any thread: while it is empty no context is forced, and a
# call tests that (a list's truth) instead of asking the context variable (the tuner is rare)
forcing: list = []


def memo(spec: OpSpec) -> BoundedMemo:
    """The memo of ``spec``'s launch steps (a declared op's run holds it, saving the lookup)."""
    found = _plans.get(spec)
    if found is None:
        with _lock:
            found = _plans.setdefault(spec, BoundedMemo(_MEMO_MAX))
    return found


def plan(spec: OpSpec, key, make: Callable[[], Any], steps: BoundedMemo | None = None):
    """The op's launch steps for ``key``: ``make()``'s result, remembered in the spec's memo
    (``steps``, when the caller holds it) unless the tuner forces a config in this context (then
    made afresh, and not kept)."""
    if steps is None:
        steps = _plans.get(spec)
        if steps is None:
            steps = memo(spec)
    table = steps.table
    try:  # (the memo's get, inline: a hit is every call but the first)
        found = table[key]
        table.move_to_end(key)
    except KeyError:
        found = None
    if found is not None and (not forcing or _forced.get() is None):
        return found
    generation = _generation
    found = make()
    if not forcing or _forced.get() is None:
        with _lock:
            if generation == _generation:
                steps[key] = found
    return found


def resolve(spec: OpSpec, device, dt: DType, problem: dict, variant: tuple = ()) -> tuple[dict, dict[str, Kernel]]:
    """The launch parameters and compiled kernels for this problem (the kernels are memoized per
    device; call through :func:`plan` to remember the result).

    ``variant``: (name, value) pairs of fixed ``-D`` macros that the call itself decides (operand
    layouts, output type); the kernels are compiled with them, the tuned parameters are shared."""
    spec.check_dtype(device, dt)
    forced_now = _forced.get()
    if forced_now is not None and (forced_now[0] is spec or forced_now[0] is spec.base):
        return forced_now[1], spec.kernels(device, dt, {**forced_now[1], **dict(variant)})
    params = None
    for source in config_source:
        params = source(spec, device, dt, problem)
        if params is not None and spec.is_valid(params, device, problem, dt):
            break
        params = None
    if params is None:
        params = default_config(spec, device, problem, dt)
    return params, spec.kernels(device, dt, {**params, **dict(variant)})


@contextmanager
def forced(spec: OpSpec, params: dict):
    """``params`` for every launch of ``spec`` in this context (how the tuner measures a config
    through the op's own run); forcing a plain spec forces its variants too (``OpSpec.variant``),
    forcing a variant forces that variant only."""
    token = _forced.set((spec, dict(params)))
    forcing.append(token)
    try:
        yield
    finally:
        forcing.remove(token)
        _forced.reset(token)


def default_config(spec: OpSpec, device, problem: dict, dt: DType) -> dict:
    """The config used where no tuned one applies: the spec's defaults for ``problem``, else (on
    devices whose limits rule them out) the valid config closest to them."""
    default = spec.defaults(device, problem, dt)
    if spec.is_valid(default, device, problem, dt):
        return default
    # the nearest valid config: the least sum of log2 distances (integers) and mismatches (others)
    best = min(spec.space(device, problem, dt), default=None, key=lambda p: sum(
        abs(math.log2(p[k] + 1) - math.log2(default[k] + 1)) if isinstance(default[k], int) else p[k] != default[k]
        for k in p))
    if best is None:
        raise InvalidArgumentError(f"{spec.name}: no configuration fits {device.id} (limits: work-group "
                                   f"{device.max_work_group_size}, local memory {device.local_mem_size} bytes)")
    return best


def forget_resolved() -> None:
    """Drop every op's remembered launch steps (after the tuning database changed)."""
    global _generation
    with _lock:
        _generation += 1
        for steps in _plans.values():
            steps.clear()

