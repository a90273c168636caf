"""Autotuning: search a kernel's launch parameters on a device and store the best in the tuning
database, which every later launch (from Python or Java, in any process) consults.

>>> r = isthmus.tune("gemm", device="opencl:0", problem={"m": 256, "n": 256, "k": 256}, budget=40)
>>> r.best, r.best_ms, r.speedup, r.by_status
>>> isthmus.ops.gemm(a, b)        # now launched with r.best (for this device, dtype and size bucket)
>>> isthmus.tune("gemm", dtype="bfloat16", trans_b=True, problem={"m": 16, "n": 4096, "k": 4096}, budget=40)
>>> isthmus.ops.gemm(x, w, trans_b=True)   # on bfloat16: the tensor-core kernel for B stored N x K, tuned

What is tuned is what the op's own call launches: the op's family for the dtype (``OpSpec.families``:
gemm's float16/bfloat16 run gemm_mma) and its variant for the flags (``OpSpec.variants``: trans_a,
trans_b), each value set under a tuning key of its own (``OpSpec.variant``).

The module is callable: ``isthmus.tune(...)`` is :func:`tune`; ``isthmus.tune.declare`` declares a
kernel of your own tunable, ``isthmus.tune.db`` is the database.

Parts: ``space.py`` (valid configs and their neighbourhoods), ``strategies/`` (exhaustive,
random, anneal, genetic: one ``tune()`` each and an ``OPTIONS`` table), ``runner.py`` (measure
and check one config; budgets; replay of recorded times), ``targets.py`` (what is measured:
library ops, declared kernels), ``storage.py`` (one SQLite WAL database file and its keys),
``lookup.py`` (which stored config a launch uses), ``db.py`` (this process's user and bundled
databases; a variant with nothing tuned falls back to its plain family's config where the rule
agrees), ``exchange.py`` (validated JSON export/import), ``bundled/`` (configs shipped with the
package, consulted after the user's database). Java's ``io.isthmus.Tuner`` and ``TunableKernel``
are :mod:`isthmus.java.spi.tuning`'s. The commands ``isthmus tune`` and ``isthmus db`` are :mod:`isthmus.cli`'s.

The user's database is ``ISTHMUS_TUNING_DB`` (default ``<cache dir>/tuning.sqlite``).
"""
from __future__ import annotations

import math
import sys
import time
import types
from collections import Counter
from dataclasses import asdict, dataclass, field, fields

from ..device import device as get_device
from ..dtypes import lookup as dtype_lookup
from ..errors import InvalidArgumentError
from . import arguments
from .arguments import PYTHON, Syntax
from .space import Config, Space
from .targets import declare  # a kernel of your own, tunable
from .targets import target as get_target


@dataclass(frozen=True)
class TuneResult:
    """What a tuning run found. ``best``/``default`` are :class:`space.Config` values (frozen,
    hashable dicts of tunable values); times are medians in ms. ``evaluations`` are this run's;
    ``earlier`` the configs measured for the same key and problem by earlier runs, which this
    run reused instead of measuring again (``best`` is the fastest of both)."""

    kernel: str
    device: str
    problem: dict
    dtype: str
    strategy: str
    seed: int
    space_size: int
    best: dict
    best_ms: float
    default: dict
    default_ms: float | None
    evaluations: list = field(repr=False)
    seconds: float = 0.0
    budget: int | None = None
    earlier: list = field(default_factory=list, repr=False)
    flags: dict = field(default_factory=dict)  # the variant tuned: the op's flags that were set (trans_b)

    @property
    def speedup(self) -> float:
        """Default time over best time (1.0 when the default is the best or did not run)."""
        if self.default_ms is None or not math.isfinite(self.best_ms) or self.best_ms <= 0:
            return 1.0
        return self.default_ms / self.best_ms

    @property
    def by_status(self) -> dict:
        return dict(Counter(ev.status for ev in self.evaluations))

    def to_json(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "speedup": self.speedup,
                "by_status": self.by_status, "evaluations": [asdict(e) for e in self.evaluations],
                "earlier": [asdict(e) for e in self.earlier]}


class TuneInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`tune`: ``result`` holds what was measured until then (every evaluation
    is in the database already; the same call again skips them and goes on)."""

    def __init__(self, result: TuneResult):
        super().__init__(f"tuning {result.kernel} interrupted after {len(result.evaluations)} evaluations")
        self.result = result


@dataclass(frozen=True)
class Job:
    """A tuning run with its arguments checked and its space built (:func:`prepare`), not yet run
    (:func:`run`): the CLI shows it before the progress bar."""

    target: object
    device: object
    dtype: object
    problem: dict
    space: Space
    evaluations: int | None  # distinct configs to measure (None: only ``seconds`` limits it)
    seconds: float | None
    strategy: str
    seed: int
    options: dict
    store: object  # the Database evaluations go to, or None
    key: object
    earlier: tuple  # Evaluations measured by earlier runs for this key and problem (reused)

    @property
    def family(self):
        return self.target.family


def prepare(kernel, device=None, problem: dict | None = None, strategy: str = "anneal", budget=None, *,
            seconds: float | None = None, seed: int = 0, dtype="float32", options: dict | None = None,
            database=True, syntax: Syntax = PYTHON, configs: list[dict] | None = None, **flags) -> Job:
    """Check a tuning run's arguments (hints in ``syntax``: :data:`arguments.PYTHON`, ``CLI`` or
    ``JAVA``), resolve the family and variant the op's call launches for ``dtype`` and ``flags``
    (see :func:`tune`), build its space and read what earlier runs measured; nothing is measured."""
    from . import db as dbmod  # (SQLite: the database module is imported on first use)
    from .runner import Budget, Evaluation

    if isinstance(budget, Budget):
        budget, seconds = budget.evaluations, budget.seconds if seconds is None else seconds
    evaluations, seconds = arguments.budget(budget, seconds, syntax)
    strategy, seed, opts = arguments.search(strategy, seed, options, syntax)
    dt = dtype_lookup(dtype)
    fam = get_target(kernel, dt, None, **flags).family
    dev = get_device(device)
    fam.check_dtype(dev, dt)
    problem = arguments.problem(fam, problem, syntax)
    tgt = get_target(kernel, dt, problem, **flags)
    space = Space.of(fam, dev, problem, dt) if configs is None else _listed(fam, configs, dev, problem, dt)
    if not len(space):
        raise InvalidArgumentError(f"tune {fam.name}: no config of its space fits {dev.id} at "
                                   f"{syntax.problem(fam.problem, problem)}")
    if evaluations is None and seconds is None:
        evaluations = arguments.DEFAULT_BUDGET
    if evaluations is not None:
        evaluations = min(evaluations, len(space))  # (no search measures more configs than there are)
    store = dbmod.user() if database is True else (database or None)
    if store is not None and store.readonly:  # before anything is measured: nothing could be kept
        raise store.read_only_error()
    key = dbmod.key_for(fam, dev, dt.name, problem)
    earlier = () if store is None else tuple(
        Evaluation(params, status, time_ms) for params, status, time_ms in store.measured(key, problem)
        if params in space)
    return Job(tgt, dev, dt, problem, space, evaluations, seconds, strategy, seed, opts, store, key, earlier)


def run(job: Job, *, measure=None, on_evaluation=None) -> TuneResult:
    """Measure ``job``: the default config first (the baseline, and the time limit of the others),
    then the strategy until the budget is spent; configs of ``job.earlier`` cost nothing. Each
    evaluation is stored as it is made. Ctrl-C raises :class:`TuneInterrupted` with the result so far."""
    from . import db as dbmod
    from .runner import Bench, Budget, Cost, Evaluation, Measure, default_params, search

    fam, dev, dt, store, key, problem = job.family, job.device, job.dtype, job.store, job.key, job.problem
    measure = measure or Measure()
    t0 = time.monotonic()
    default = Config(default_params(fam, dev, problem, dt))
    base = cost = None
    history: list = []
    known = {}  # earlier measurements: a config's best time, inf when it never ran right
    for ev in job.earlier:
        k = Space.key(ev.params)
        known[k] = min(known.get(k, math.inf), ev.cost)
    known.pop(Space.key(default), None)  # measured again below: the baseline of this run
    bench = None
    try:
        bench = Bench(job.target, dev, problem, dt.np, measure, job.seed)
        base = bench.evaluate(default, None)
        default_ms = base.time_ms if base.status == "ok" else None
        timeout = measure.timeout_ms if measure.timeout_ms is not None else (
            10 * default_ms + 20 if default_ms is not None else None)
        if store is not None:
            store.record(key, problem, default, base.time_ms, base.status, error=base.error, strategy="default",
                         default_ms=default_ms)

        def evaluate(config) -> Evaluation:
            ev = base if config == default else bench.evaluate(config, timeout)
            if store is not None and ev is not base:
                store.record(key, problem, config, ev.time_ms, ev.status, error=ev.error, strategy=job.strategy,
                             default_ms=default_ms)
            return ev

        cost = Cost(evaluate, Budget(job.evaluations, job.seconds), len(job.space), on_evaluation, known=known)
        history = search(job.space, cost, job.strategy, job.seed, job.options)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
        history = cost.history if cost is not None else []
    finally:
        if bench is not None:
            bench.close()
        if store is not None:
            dbmod.forget()
    measured = {Space.key(e.params) for e in history} | {Space.key(default)}
    earlier: dict = {}  # one per config, its best measurement, for configs this run did not measure
    for e in job.earlier:
        k = Space.key(e.params)
        if k not in measured and (k not in earlier or e.cost < earlier[k].cost):
            earlier[k] = e
    # in the order the database received them (earlier runs, the default, this run's): among equal times the
    # first one is the best, as the database keeps it (a later row replaces the best only when faster)
    ok = [e for e in list(earlier.values()) + ([base] if base is not None else []) + history if e.status == "ok"]
    best = min(ok, key=lambda e: e.time_ms) if ok else None
    result = TuneResult(fam.name, dev.id, problem, dt.name, job.strategy, job.seed, len(job.space),
                        best.params if best else Config(), best.time_ms if best else math.inf, default,
                        base.time_ms if base is not None and base.status == "ok" else None, history,
                        time.monotonic() - t0, job.evaluations, list(earlier.values()),
                        dict.fromkeys(fam.flags, True))
    if interrupted:
        raise TuneInterrupted(result) from None
    return result


def tune(kernel, device=None, problem: dict | None = None, strategy: str = "anneal", budget=None, *,
         seconds: float | None = None, seed: int = 0, dtype="float32", measure=None, options: dict | None = None,
         database=True, on_evaluation=None, configs: list[dict] | None = None, **flags) -> TuneResult:
    """Tune ``kernel`` (a library op's name such as ``"gemm"``, or a kernel from :func:`declare`,
    or its name) for ``problem`` (its named sizes: ``n``; ``rows``, ``cols``; ``m``, ``n``, ``k``)
    on ``device``, ``dtype`` and the op's variant ``flags``, written as in the op's call:
    ``isthmus.tune("gemm", dtype="bfloat16", trans_b=True, ...)`` tunes exactly the kernel that
    ``gemm(x, w, trans_b=True)`` launches on bfloat16 (the tensor-core family, ``TRANS_B=1``),
    and stores it under the key that launch reads.

    ``budget``: distinct configs to evaluate (default: 50, or the whole space when smaller);
    ``seconds``: a time limit as well (alone: the only limit); ``configs``: search these configs
    only (each a dict of tunables; those it leaves out keep their defaults), e.g. with
    ``strategy="exhaustive"`` to time a list. Every evaluation is stored in the tuning database as
    it is made (``database=False``: none; or a :class:`db.Database`), the best per key kept for
    launches; a second call for the same kernel, device, dtype, flags and problem reuses what the first measured and goes on from there. Ctrl-C raises :class:`TuneInterrupted`, whose
    ``result`` is the best found so far.

    >>> r = isthmus.tune("softmax", problem={"rows": 4096, "cols": 1000}, budget=30)
    """
    return run(prepare(kernel, device, problem, strategy, budget, seconds=seconds, seed=seed, dtype=dtype,
                       options=options, database=database, configs=configs, **flags),
               measure=measure, on_evaluation=on_evaluation)


def _listed(family, configs, device, problem: dict, dt) -> Space:
    """A space of the listed configs (each over the tunables' defaults), every one checked."""
    names = {t.name for t in family.tunables}
    out: list = []
    for given in configs:
        unknown = set(given) - names if isinstance(given, dict) else None
        if unknown is None or unknown:
            raise InvalidArgumentError(f"tune {family.name}: configs must be dicts of its tunables "
                                       f"({', '.join(t.name for t in family.tunables)}), got {given!r}")
        config = Config({**{t.name: t.default for t in family.tunables}, **given})
        if not family.is_valid(config, device, problem, dt):
            raise InvalidArgumentError(f"tune {family.name}: config {dict(given)} is not in its space on {device.id} "
                                       f"at {problem} (a value out of range, or a restriction broken: "
                                       f"{'; '.join(family.restrictions)})")
        if config not in out:
            out.append(config)
    return Space(family, out, {Space.key(c): i for i, c in enumerate(out)})


def tuned_config(spec, device, dt, problem: dict) -> dict | None:
    """The tuning database's params for an op's launch, or None: what the ops ask (through
    ``isthmus.ops.resolve.config_source``) when they first see a call shape. The database module
    is imported on the first such call, never at import time."""
    from . import db

    return db.lookup(spec, device, dt, problem)


class _CallableModule(types.ModuleType):
    """``isthmus.tune(...)`` calls :func:`tune` while ``isthmus.tune.db`` stays the submodule."""

    def __call__(self, *args, **kwargs) -> TuneResult:
        return tune(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
__all__ = ["Job", "TuneInterrupted", "TuneResult", "declare", "prepare", "run", "tune"]
