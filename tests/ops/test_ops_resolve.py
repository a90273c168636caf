"""isthmus.ops.resolve: the launch-step memo is resolve's (one bounded LRU per spec, the spec an
immutable value), a forced config is made afresh and never kept, and what was made before the
tuning database changed is not stored after it."""
import dataclasses


from isthmus.dtypes import lookup
from isthmus.ops import resolve
from isthmus.ops.registry import OPS
from isthmus.ops.spec import OpSpec


def test_the_spec_is_a_value_and_the_memo_is_resolves():
    spec = OPS["scale"]
    assert not any(f.name.startswith("_") for f in dataclasses.fields(OpSpec))  # no memo field on the spec
    copy = dataclasses.replace(spec, summary="a copy")
    assert resolve.memo(copy) is not resolve.memo(spec) and resolve.memo(spec) is resolve.memo(spec)
    assert copy.run is not spec.run  # a declared op's copy writes its own run (its own memo, its own kernels)
    resolve.plan(spec, ("r25", "key"), lambda: "steps")
    assert resolve.memo(spec).get(("r25", "key")) == "steps" and resolve.memo(copy).get(("r25", "key")) is None
    resolve.forget_resolved()
    assert resolve.memo(spec).get(("r25", "key")) is None


def test_the_memo_is_bounded_and_keeps_the_recently_used():
    spec = dataclasses.replace(OPS["axpy"], summary="r25 bounded")
    made = []

    def make(k):
        made.append(k)
        return k

    for k in range(resolve._MEMO_MAX):
        resolve.plan(spec, k, lambda k=k: make(k))
    assert resolve.plan(spec, 0, lambda: make("again")) == 0  # a hit: 0 is now the most recent
    resolve.plan(spec, "one more", lambda: make("one more"))
    memo = resolve.memo(spec)
    assert len(memo) == resolve._MEMO_MAX and memo.get(0) == 0 and memo.get(1) is None  # 1 was the oldest
    assert made.count("again") == 0


def test_forced_configs_and_a_database_change_meanwhile_are_not_kept(dev):
    spec = dataclasses.replace(OPS["axpy"], summary="r25 forced")
    params = dict(resolve.default_config(spec, dev, {"n": 100}, lookup("float32")))
    with resolve.forced(spec, params):
        assert resolve.plan(spec, "k", lambda: "forced") == "forced"
    assert resolve.memo(spec).get("k") is None

    def make_while_the_database_changes():
        resolve.forget_resolved()
        return "stale"
    assert resolve.plan(spec, "k", make_while_the_database_changes) == "stale"
    assert resolve.memo(spec).get("k") is None  # made before the change: not stored after it
    assert resolve.plan(spec, "k", lambda: "fresh") == "fresh" and resolve.memo(spec).get("k") == "fresh"
