"""A kernel family: its OpenCL source, entry points, dtypes, tunable parameters (compile-time
``-D`` macros with values, a default and restrictions) and the names of its problem sizes.

Launch configurations are resolved per (device, dtype, problem bucket) and memoized, so a library
call spends microseconds on it; tuned configurations come from the tuning database when one holds
a matching entry, else the family's defaults.
"""
from __future__ import annotations

import contextvars
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .. import knobs
from ..dtypes import DType
from ..errors import InvalidArgumentError, UnsupportedDtypeError
from ..kernel import Kernel, Program


@dataclass(frozen=True)
class Tunable:
    name: str
    values: tuple
    default: Any
    # (name, values): the tunable matters only while the tunable `name` (listed before it) holds
    # one of `values` (a variant's own parameters); otherwise it stays at its default, so the
    # search space holds each variant once instead of the product of all variants' parameters.
    when: tuple | None = None

    def applies(self, params: dict) -> bool:
        return self.when is None or params.get(self.when[0]) in self.when[1]


@dataclass(frozen=True)
class Family:
    name: str
    source: str  # file in opencl/
    entries: tuple[str, ...]  # kernel functions the op launches
    dtypes: tuple[str, ...]
    tunables: tuple[Tunable, ...]
    problem: tuple[str, ...]  # names of the problem sizes (n; rows, cols; m, n, k)
    restrictions: tuple[str, ...] = ()  # Python expressions over tunables, problem sizes and device limits
    defines: tuple[tuple[str, Any], ...] = ()  # fixed -D macros
    storage: tuple[tuple[str, str], ...] = ()  # dtype name -> storage ctype override
    cpu_defaults: tuple[tuple[str, Any], ...] = ()  # defaults that suit CPU devices better
    # (problem buckets, device, dtype, params) -> the tunables the problem's shape calls for (a
    # variant, a tile), merged over the defaults ``params``; it depends only on the buckets, since
    # configs are memoized per bucket. Used where no tuned config is found.
    rule: Callable[[dict, Any, Any, dict], dict] | None = field(default=None, compare=False)
    _compiled: list = field(default_factory=list, compare=False, repr=False)

    # ---- parameters --------------------------------------------------------------------------
    def defaults(self, device, problem: dict | None = None, dtype: DType | None = None) -> dict:
        """The config used where no tuned one applies: the tunables' defaults (CPU ones on CPU
        devices), then what the family's rule picks for ``problem`` when one is given."""
        params = {t.name: t.default for t in self.tunables}
        if device.kind == "cpu":
            params.update(dict(self.cpu_defaults))
        if self.rule is not None and problem is not None:
            buckets = dict(zip(self.problem, problem_bucket(self, problem)))
            params.update(self.rule(buckets, device, dtype, dict(params)))
        return params

    def _restriction_code(self):
        if not self._compiled:
            self._compiled.extend(compile(r, f"<{self.name} restriction>", "eval") for r in self.restrictions)
        return self._compiled

    def is_valid(self, params: dict, device, problem: dict | None = None, dtype: DType | None = None) -> bool:
        for t in self.tunables:
            if params.get(t.name) not in t.values or (params[t.name] != t.default and not t.applies(params)):
                return False
        ns = {p: 1 << 20 for p in self.problem}  # a space asked for without a problem: assume a large one
        ns.update(problem or {})
        ns.update({"max_work_group_size": device.max_work_group_size, "local_mem_size": device.local_mem_size,
                   "is_cpu": getattr(device, "kind", None) == "cpu",
                   "acc_size": 8 if dtype is not None and dtype.acc in ("double", "long") else 4,
                   "min": min, "max": max})
        ns.update(params)
        return all(eval(code, {"__builtins__": {}}, ns) for code in self._restriction_code())

    def space(self, device, problem: dict | None = None, dtype: DType | None = None) -> Iterator[dict]:
        """Every valid combination of tunable values (the search space)."""
        names = [t.name for t in self.tunables]

        def walk(i, acc):
            if i == len(names):
                if self.is_valid(acc, device, problem, dtype):
                    yield dict(acc)
                return
            t = self.tunables[i]
            for v in t.values if t.applies(acc) else (t.default,):
                acc[names[i]] = v
                yield from walk(i + 1, acc)
        yield from walk(0, {})

    # ---- compiled kernels --------------------------------------------------------------------
    def check_dtype(self, device, dt: DType) -> None:
        if dt.name not in self.dtypes:
            raise UnsupportedDtypeError(f"{self.name} does not support {dt.name}; it supports {', '.join(self.dtypes)}")
        device.check_dtype(dt)

    def source_text(self) -> str:
        kdir = knobs.kernel_dir()
        return (kdir / "dtype.h").read_text() + "\n" + (kdir / self.source).read_text()

    def kernels(self, device, dt: DType, params: dict) -> dict[str, Kernel]:
        """The family's entry points compiled for ``dt`` with ``params`` (memoized per device)."""
        key = ("family", self.name, self.defines, dt.name, tuple(sorted(params.items())))
        found = device._kernels.get(key)
        if found is None:
            ctype = dict(self.storage).get(dt.name, dt.ctype)
            acc = dt.acc if ctype == dt.ctype else ctype
            defines = {"T": ctype, "ACC": acc, "IS_HALF": int(ctype == "half"), **dict(self.defines), **params}
            if dt.name == "bfloat16" and acc == "float":  # ushort bits that LOAD/STORE convert
                defines["IS_BF16"] = 1
            program = Program.build(device, self.source_text(), defines, self.entries[0])
            found = {name: program.kernel(name) for name in self.entries}
            device._kernels[key] = found
        return found


def bucket(value: int) -> int:
    """Problem sizes are looked up by bucket: the next power of two."""
    return 1 if value <= 1 else 1 << (int(value) - 1).bit_length()


def problem_bucket(family: Family, problem: dict) -> tuple[int, ...]:
    """The problem's bucket: each size (in the family's order) rounded up to a power of two."""
    return tuple(bucket(int(problem[p])) for p in family.problem)


# Shape classes: a dimension is tiny (<= 16: a batch, a vector, a tall or wide matrix), small
# (<= 512: attention-width rows, skinny gemm) or big; a problem whose big dimensions differ by
# 8x or more is elongated (vocabulary-width rows).  Thresholds are on buckets, so a class is a
# function of the bucket and old tuning records map to their class unchanged.
_TINY, _SMALL, _ELONGATED = 16, 512, 8


def shape_class(buckets: tuple[int, ...]) -> str:
    """The shape class of a problem bucket, e.g. ``"bb"`` for 8192x8192, ``"bs"`` for 262144x128,
    ``"bb/e"`` for 4096x32000, ``"tbb"`` for gemm 16x4096x4096; ``""`` for a 1-D problem (a
    length has no shape). A tuned config is applied across buckets only within its class, so one
    tuned at 8192^2 never runs 262144x128."""
    if len(buckets) < 2:
        return ""
    tags = "".join("t" if b <= _TINY else "s" if b <= _SMALL else "b" for b in buckets)
    big = [b for b in buckets if b > _SMALL]
    return tags + ("/e" if len(big) >= 2 and max(big) >= _ELONGATED * min(big) else "")


_resolve_lock = threading.Lock()
_resolved: dict = {}
_generation = 0  # bumped by forget_resolved(): what was resolved before it must not be stored after it
_recipe_memos: list[dict] = []
_RECIPES_MAX = 4096  # distinct (device, dtype, shape) per op kept; past that the memo starts over
# Set by isthmus.tune.db when it is importable: (family, device, dtype, problem) -> params or None.
config_source: list[Callable] = []


def resolve(family: Family, device, dt: DType, problem: dict, variant: tuple = ()) -> tuple[dict, dict[str, Kernel]]:
    """The launch parameters and compiled kernels for this problem (memoized by bucket).

    ``variant``: (name, value) pairs of fixed ``-D`` macros that the call itself decides (operand
    layouts, output type); the kernels are compiled with them, the tuned parameters are shared."""
    forced = _forced.get()
    if forced is not None and forced[0] is family:  # the tuner measuring one candidate config
        family.check_dtype(device, dt)
        return forced[1], family.kernels(device, dt, {**forced[1], **dict(variant)})
    key = (family.name, family.defines, device.id, dt.name, *[bucket(problem[p]) for p in family.problem],
           *variant)
    found = _resolved.get(key)
    if found is None:
        generation = _generation
        family.check_dtype(device, dt)
        params = None
        for source in config_source:
            params = source(family, device, dt, problem)
            if params is not None and family.is_valid(params, device, problem, dt):
                break
            params = None
        if params is None:
            params = family.defaults(device, problem, dt)
            if not family.is_valid(params, device, problem, dt):
                params = _first_valid(family, device, problem, dt)
        found = (params, family.kernels(device, dt, {**params, **dict(variant)}))
        with _resolve_lock:
            if generation == _generation:
                _resolved[key] = found
    return found


def recipes() -> dict:
    """A memo for one op's launch recipes: what its launches need that depends only on (device,
    dtype, shape) (resolved params, grid, kernels, packed scalar arguments), so a repeated call
    skips resolving and packing. Filled through :func:`recipe`, emptied with the resolved configs
    (:func:`forget_resolved`, i.e. when a tuning database changes).

    An op launches from a remembered recipe, with its buffers' cached packed arguments, only when
    ``dev._capture is None and forcing() is None``: while the tuner forces a config the recipe
    would be the wrong config, and a graph being captured on the device sees launches through the
    device's hooks; both take the op's general path."""
    memo: dict = {}
    _recipe_memos.append(memo)
    return memo


def recipe(memo: dict, key, make: Callable[[], Any]):
    """``make()`` (which resolves configs), remembered in ``memo`` under ``key`` unless the tuner
    forces a config in this context or the resolved configs were forgotten meanwhile."""
    generation = _generation
    found = make()
    if _forced.get() is None:
        with _resolve_lock:
            if generation == _generation:
                if len(memo) >= _RECIPES_MAX:
                    memo.clear()
                memo[key] = found
    return found


def recall(memo: dict, key, dev, make: Callable[[], Any]) -> tuple[Any, bool]:
    """(recipe, fast): the op's recipe for ``key`` (made and remembered through :func:`recipe` when
    missing), and whether the op may launch it with its buffers' cached packed arguments
    (``buf._arg or buf._launch_arg()``): not while a graph is being captured on ``dev`` (capture
    sees buffers through ``dev._buffer_arg``) or the tuner forces a config."""
    found = memo.get(key)
    if found is not None and dev._capture is None and _forced.get() is None:
        return found, True
    return recipe(memo, key, make), False


# (family, params) that resolve() returns unmemoized in this context: how the tuner launches a
# candidate config through the op's own run() without touching what other threads resolve.
_forced: contextvars.ContextVar = contextvars.ContextVar("isthmus_forced_config", default=None)
forcing = _forced.get  # () -> the forced (family, params) of this context, or None


@contextmanager
def forced(family: Family, params: dict):
    token = _forced.set((family, dict(params)))
    try:
        yield
    finally:
        _forced.reset(token)


def _first_valid(family: Family, device, problem: dict, dt: DType) -> dict:
    """The valid config closest to the defaults, for devices whose limits rule the defaults out."""
    default = family.defaults(device, problem, dt)
    best = None
    for params in family.space(device, problem, dt):
        dist = sum(abs(math.log2(params[k] + 1) - math.log2(default[k] + 1)) if isinstance(default[k], int)
                   else params[k] != default[k] for k in params)
        if best is None or dist < best[0]:
            best = (dist, params)
    if best is None:
        raise InvalidArgumentError(f"{family.name}: no configuration fits {device.id} (limits: work-group "
                                   f"{device.max_work_group_size}, local memory {device.local_mem_size} bytes)")
    return best[1]


def forget_resolved() -> None:
    """Drop memoized configs and the op recipes made from them (after the tuning database changed)."""
    global _generation
    with _resolve_lock:
        _generation += 1
        _resolved.clear()
        for memo in _recipe_memos:
            memo.clear()


def _tuning_database(family: Family, device, dt: DType, problem: dict) -> dict | None:
    from ..tune import db  # imported on the first unresolved launch, never at import time

    return db.lookup(family, device, dt, problem)


config_source.append(_tuning_database)
