"""Strategies over a synthetic space (replayed times, no device): budgets, seeds, coverage."""
from __future__ import annotations

import math

import pytest

from isthmus.ops.spec import OpSpec, Tunable
from isthmus.tune import strategies
from isthmus.tune.runner import Budget, Cost, Evaluation, replay, search
from isthmus.tune.space import Space


class _Dev:
    max_work_group_size = 1024
    local_mem_size = 1 << 16
    local_mem_optin = None
    wgmma = False
    kind = "gpu"


SPEC = OpSpec(name="synthetic", source="none.cl", entries=("k",), dtypes=("float32",),
                tunables=(Tunable("A", (1, 2, 4, 8, 16, 32), 4), Tunable("B", (1, 2, 4, 8, 16, 32), 4),
                          Tunable("C", (1, 2, 3, 4, 5, 6, 7), 1)),
                problem=("n",), restrictions=("A * B <= max_work_group_size // 4",))


def _space():
    return Space.of(SPEC, _Dev(), {"n": 1024}, None)


def _times(space):
    # A smooth bowl around A=8, B=4, C=5 with a few failing configs, like a real kernel's landscape.
    out = {}
    for c in space.configs:
        t = 1 + abs(math.log2(c["A"]) - 3) ** 2 + 0.5 * abs(math.log2(c["B"]) - 2) ** 2 + 0.1 * (c["C"] - 5) ** 2
        out[Space.key(c)] = math.inf if c["A"] == 32 and c["C"] == 7 else t
    return out


def test_space_respects_restrictions_and_neighbours():
    space = _space()
    assert len(space) >= 200
    assert all(c["A"] * c["B"] <= 256 for c in space.configs)
    c = {"A": 4, "B": 4, "C": 1}
    nb = space.neighbours(c)
    assert {"A": 2, "B": 4, "C": 1} in nb and {"A": 4, "B": 4, "C": 2} in nb
    assert all(sum(c[k] != n[k] for k in c) == 1 for n in space.neighbours(c, jump=True))


@pytest.mark.parametrize("name", ["exhaustive", "random", "anneal", "genetic"])
def test_budget_is_respected_and_seed_reproduces(name):
    space = _space()
    times = _times(space)
    a = replay(space, times, name, Budget(evaluations=30), seed=7)
    b = replay(space, times, name, Budget(evaluations=30), seed=7)
    assert len(a) == 30
    assert [e.params for e in a] == [e.params for e in b]
    assert len({Space.key(e.params) for e in a}) == 30  # each config counted once


def test_exhaustive_covers_the_space():
    space = _space()
    hist = replay(space, _times(space), "exhaustive", Budget(), seed=0)
    assert len(hist) == len(space)
    assert sum(e.status != "ok" for e in hist) == sum(1 for c in space.configs if c["A"] == 32 and c["C"] == 7)


def test_anneal_beats_random_on_a_smooth_space():
    space = _space()
    times = _times(space)
    best = min(times.values())
    budget = Budget(evaluations=len(space) // 5)
    found = {s: [min(e.cost for e in replay(space, times, s, budget, seed)) / best for seed in range(5)]
             for s in ("anneal", "random")}
    assert sum(found["anneal"]) / 5 <= 1.05
    assert sum(found["anneal"]) <= sum(found["random"])


def test_seconds_budget_stops_the_search():
    space = _space()
    clock = iter(range(10 ** 6))
    cost = Cost(lambda c: Evaluation(c, "ok", 1.0), Budget(seconds=5), len(space), clock=lambda: next(clock))
    hist = search(space, cost, "random", seed=1)
    assert 0 < len(hist) <= 5


def test_unknown_strategy_and_option_are_errors():
    with pytest.raises(ValueError, match="no tuning strategy"):
        strategies.get("bogus")
    with pytest.raises(ValueError, match="no option"):
        strategies.options(strategies.get("anneal"), {"temperature": 3})
    for name in strategies.NAMES:
        module = strategies.get(name)
        assert callable(module.tune) and isinstance(module.OPTIONS, dict)


def test_config_is_a_frozen_hashable_json_value():
    import json

    from isthmus.tune.space import Config

    c = Config({"WG": 64, "VPT": 2})
    assert c == {"VPT": 2, "WG": 64} and hash(c) == hash(Config({"VPT": 2, "WG": 64}))
    assert json.loads(json.dumps(c)) == c
    with pytest.raises(TypeError, match="frozen"):
        c["WG"] = 128
    with pytest.raises(TypeError, match="frozen"):
        c.update(WG=128)
    assert Evaluation({"WG": 1}, "ok", 1.0).params == Config({"WG": 1})
