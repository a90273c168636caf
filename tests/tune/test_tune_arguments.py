"""tune/arguments.py: a tuning run's arguments are checked before anything runs, each bad one a
typed error whose hint is written the way the caller writes it: Python keywords, the CLI's flags,
Java's builder calls (issue 26, items 8, 10, 11)."""
from __future__ import annotations

import pytest

import isthmus
from isthmus.errors import InvalidArgumentError
from isthmus.ops.registry import OPS
from isthmus.tune import arguments
from isthmus.tune.arguments import CLI, JAVA, PYTHON

GEMM = OPS["gemm"]

BAD_PROBLEMS = [  # (problem, what the message says)
    ({"m": 0, "n": 64, "k": 64}, "size m must be at least 1"),
    ({"m": 64, "n": -3, "k": 64}, "size n must be at least 1"),
    ({"m": 64, "n": 64}, "missing size k"),
    ({"m": 64, "n": 64, "k": 64, "rows": 8}, "unknown size 'rows'"),
    ({"m": 64, "n": 2.5, "k": 64}, "size n must be an integer"),
    ({"m": 64, "n": True, "k": 64}, "size n must be an integer"),
    ([64, 64, 64], "give the problem sizes m, n, k"),
    (None, "give the problem sizes m, n, k"),
]
HINTS = {PYTHON: 'problem={"m": ', CLI: "--size m=", JAVA: '.size("m", '}


@pytest.mark.parametrize("given, says", BAD_PROBLEMS)
@pytest.mark.parametrize("syntax", [PYTHON, CLI, JAVA], ids=lambda s: s.name)
def test_a_bad_problem_is_refused_with_a_hint_in_the_callers_syntax(given, says, syntax):
    with pytest.raises(InvalidArgumentError, match=says) as caught:
        arguments.problem(GEMM, given, syntax)
    text = str(caught.value)
    assert HINTS[syntax] in text, text
    others = [h for s, h in HINTS.items() if s is not syntax]
    assert not any(h in text for h in others), text  # no Python dict in a CLI or Java message
    if syntax is not PYTHON:
        assert "{" not in text


def test_the_hint_keeps_the_sizes_the_user_gave():
    with pytest.raises(InvalidArgumentError) as caught:
        arguments.problem(GEMM, {"m": 0, "n": 96, "k": 40}, CLI)
    assert "got --size m=0" in str(caught.value) and "e.g. --size m=4096 n=96 k=40" in str(caught.value)
    with pytest.raises(InvalidArgumentError) as caught:
        arguments.problem(OPS["softmax"], {"rows": 7}, JAVA)
    assert '.size("rows", 7).size("cols", 8192)' in str(caught.value)
    # the example's other sizes are the op's standard problem, not a placeholder (attention's heads=32 head_dim=128)
    with pytest.raises(InvalidArgumentError) as caught:
        arguments.problem(OPS["attention"], {"batch": 2, "seq_q": 0}, CLI)
    assert "e.g. --size batch=2 seq_q=4096 seq_k=4096 heads=32 kv_heads=32 head_dim=128" in str(caught.value)


@pytest.mark.parametrize("evaluations, seconds, says", [
    (0, None, "at least 1"), (-5, None, "at least 1"), (2.5, None, "at least 1"), (True, None, "at least 1"),
    (None, 0, "above 0"), (None, -1.0, "above 0"), (None, float("nan"), "above 0"), (None, "10", "above 0")])
def test_a_budget_below_one_or_a_time_limit_of_zero_is_refused(evaluations, seconds, says):
    for syntax, hint in ((PYTHON, "budget=" if seconds is None else "seconds="),
                         (CLI, "--budget " if seconds is None else "--seconds "),
                         (JAVA, ".budget(" if seconds is None else ".seconds(")):
        with pytest.raises(InvalidArgumentError, match=says) as caught:
            arguments.budget(evaluations, seconds, syntax)
        assert hint in str(caught.value)
    assert arguments.budget(None, None) == (None, None) and arguments.budget(3, 1) == (3, 1.0)


def test_strategy_seed_and_options_are_checked():
    with pytest.raises(InvalidArgumentError, match=r"no tuning strategy 'bogus'.*--strategy anneal"):
        arguments.search("bogus", 0, None, CLI)
    with pytest.raises(InvalidArgumentError, match=r"Strategy\.ANNEAL"):
        arguments.search("bogus", 0, None, JAVA)
    with pytest.raises(InvalidArgumentError, match=r"seed must be an integer, got 'x'.*seed=0"):
        arguments.search("anneal", "x", None, PYTHON)
    with pytest.raises(InvalidArgumentError, match="has no option"):
        arguments.search("anneal", 0, {"temperature": 3}, PYTHON)
    assert arguments.search("random", 7, {"fraction": 0.5}) == ("random", 7, {"fraction": 0.5})


@pytest.mark.parametrize("kwargs, says", [
    ({"strategy": "bogus"}, "no tuning strategy 'bogus'"), ({"seed": "x"}, "seed must be an integer"),
    ({"problem": {"n": -1}}, "size n must be at least 1"), ({"problem": {"size": 10}}, "unknown size 'size'"),
    ({"budget": 0}, "at least 1"), ({"seconds": 0}, "above 0")])
def test_isthmus_tune_refuses_bad_arguments_before_anything_runs(kwargs, says, tuning_db):
    kwargs = {"problem": {"n": 1000}, **kwargs}
    with pytest.raises(InvalidArgumentError, match=says):
        isthmus.tune("axpy", on_evaluation=lambda ev: pytest.fail("an evaluation ran"), **kwargs)
    assert not tuning_db.exists() or isthmus.tune.db.user().counts()["runs"] == 0


def test_no_budget_means_a_bounded_search():
    job = isthmus.tune.prepare("gemm", problem={"m": 1024, "n": 1024, "k": 1024}, database=False)
    assert len(job.space) > 1000 and job.evaluations == arguments.DEFAULT_BUDGET and job.seconds is None
    small = isthmus.tune.prepare("axpy", problem={"n": 1000}, database=False)
    assert small.evaluations == min(len(small.space), arguments.DEFAULT_BUDGET)
    timed = isthmus.tune.prepare("gemm", problem={"m": 64, "n": 64, "k": 64}, seconds=30, database=False)
    assert timed.evaluations is None and timed.seconds == 30.0  # a time limit alone bounds it
