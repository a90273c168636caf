"""What the tuner stores is what the op's own launch reads: for every library op, every dtype it
takes (whichever family runs it: gemm's float16/bfloat16 run the tensor-core gemm_mma) and every
value set of its variant flags (gemm's trans_a, trans_b), tune with a budget of 2 into a fresh
database, launch the op as a user calls it under a recording Recorder, and check that every
launched kernel is the stored key's kernel (its source, its fixed defines) compiled with the
stored best config. Then a different config written as the best under the key the tuner wrote
must be what the next launch takes (so the check holds even where the search kept the default)."""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

import isthmus
from isthmus.record import recording
from isthmus.dtypes import lookup
from isthmus.ops.registry import OPS
from isthmus.tune import db as dbmod
from isthmus.tune.runner import Measure
from isthmus.tune.storage import Key, code_of

# small, odd problems of each vocabulary (gemm's: several tiles, K not a multiple of a K-step)
PROBLEMS = {("n",): {"n": 1000}, ("rows", "cols"): {"rows": 13, "cols": 70}, ("m", "n", "k"): {"m": 33, "n": 40, "k": 24},
            ("batch", "seq_q", "seq_k", "heads", "kv_heads", "head_dim"):
                {"batch": 2, "seq_q": 13, "seq_k": 21, "heads": 4, "kv_heads": 2, "head_dim": 8},
            ("batch", "new", "keys", "heads", "kv_heads", "head_dim"):
                {"batch": 2, "new": 1, "keys": 40, "heads": 4, "kv_heads": 2, "head_dim": 8},
            ("tokens", "heads", "head_dim"): {"tokens": 13, "heads": 3, "head_dim": 8},
            ("batch", "seq", "heads", "head_dim"): {"batch": 2, "seq": 13, "heads": 3, "head_dim": 8}}
CASES = [(name, dt, flags) for name, spec in OPS.items() for dt in spec.dtypes for flags in spec.variant_sets()]


def _id(name, dt, flags) -> str:
    return "-".join([name, dt, *(f for f, on in flags.items() if on)])


def _launch(dev, spec, problem: dict, dt, flags: dict, rng) -> list:
    """(kernel, defines) of every launch of the op called as a user calls it (its spec's call)."""
    host = spec.inputs(problem, np.dtype(dt.np), rng, **flags)
    args = [dev.asarray(h) for h in host]
    with recording(dev) as rec:
        out = spec.sample_call(*args, **flags)
    dev.synchronize()
    for b in {id(b): b for b in (*args, *(out if isinstance(out, tuple) else (out,)))}.values():
        b.close()
    assert rec.launches, f"{spec.name} launched nothing"
    # the op's own kernels (an op built on others, fused_linear_cross_entropy on gemm, launches theirs
    # under their own tuning keys)
    own = spec.family(dt).entries
    return [(kernel, kernel.program.defines) for kernel, *_ in rec.launches if kernel.name in own]


def _assert_launched(launched: list, key: Key, params: dict) -> None:
    options = json.loads(key.options)["defines"]
    for kernel, defines in launched:
        source = hashlib.sha256(code_of(kernel.program.source).encode()).hexdigest()
        assert source == key.source_hash, f"{kernel.name} is not the source of {key.kernel}, the tuned kernel"
        assert {k: defines.get(k) for k in options} == options, (kernel.name, defines, key.options)
        assert {k: defines.get(k) for k in params} == dict(params), (kernel.name, defines, params)


@pytest.mark.parametrize("name,dtype,flags", CASES, ids=[_id(*c) for c in CASES])
def test_the_op_launches_what_the_tuner_stored(dev, tuning_db, rng, name, dtype, flags):
    spec, dt = OPS[name], lookup(dtype)
    if not dev.supports(dt):
        pytest.skip(f"{dev.id} has no {dtype}")
    problem = PROBLEMS[spec.problem]
    r = isthmus.tune(name, device=dev, problem=problem, dtype=dtype, strategy="random", budget=2, seed=1,
                     measure=Measure(warmup=0, repeat=1, input_sets=1, max_batch=1), **flags)
    assert math.isfinite(r.best_ms), r.by_status
    store = dbmod.user()
    # the key the tuner wrote (every evaluation is stored under it), and its best row
    keys = {tuple(run[c] for c in ("kernel", "source_hash", "options", "backend", "vendor", "device", "driver",
                                   "dtype", "bucket")) for run in store.runs()}
    assert len(keys) == 1, keys
    (row,) = keys
    key = Key(*row[:-1], tuple(json.loads(row[-1])))
    assert key.dtype == dtype
    (best,) = store.best()
    assert json.loads(best["params"]) == r.best
    _assert_launched(_launch(dev, spec, problem, dt, flags, rng), key, r.best)

    # Another evaluated config made the best under that key: the next launch takes it.
    other = next((e.params for e in [*r.evaluations] if e.status == "ok" and e.params != r.best),
                 r.default if r.default != r.best else None)
    assert other is not None, r.evaluations
    store.record(key, problem, other, r.best_ms / 100, "ok")
    dbmod.forget()
    _assert_launched(_launch(dev, spec, problem, dt, flags, rng), key, other)


class _Gpu:
    """A stand-in GPU (the rule's choices depend on compute units): never launched."""

    kind, max_work_group_size, local_mem_size, local_mem_optin, local_mem_dynamic = "gpu", 1024, 49152, None, False
    compute_units, compute_capability, wgmma, mma_sync, native_vector_width_float, id = 132, None, False, False, 0, "fake:0"

    def identity(self):
        return {"backend": "opencl", "vendor": "Fake", "name": "Fake GPU", "driver": "1.0", "platform": "p"}


def test_a_variant_with_nothing_tuned_takes_the_plain_layouts_config_where_the_rule_agrees(db):
    """The shipped configs hold plain layouts only: a transposed call falls back to its family's
    plain config where the rule picks one config for both layouts; where it treats the layout apart
    (the rows kernel for x @ W.T with a few rows on a GPU), the rule's choice stands; a config tuned
    for the variant itself wins."""
    from isthmus.ops.specs import gemm as G
    from isthmus.tune.db import key_for

    dev, f32 = _Gpu(), lookup("float32")
    plain, tb = G.SPEC, G.SPEC.variant(trans_b=True)
    assert tb is G.family_for(False, True) and tb.base is plain and dict(tb.defines) == {"TRANS_A": 0, "TRANS_B": 1}
    for problem, agrees in (({"m": 64, "n": 4096, "k": 4096}, True), ({"m": 1, "n": 4096, "k": 4096}, False)):
        tuned = dict(plain.defaults(dev, problem, f32), TK=8, VARIANT=0, KS=4)
        assert plain.is_valid(tuned, dev, problem, f32) and tuned != tb.defaults(dev, problem, f32)
        db.record(key_for(plain, dev, "float32", problem), problem, tuned, 1.0, "ok")
        dbmod.forget()
        found = dbmod.explain(tb, dev, f32, problem)
        if agrees:
            assert found == ("user database, exact, tuned without trans_b", tuned)
        else:
            assert found is None and tb.defaults(dev, problem, f32)["VARIANT"] == 3  # the rows kernel
    own = dict(tb.defaults(dev, problem, f32), RN=1)
    db.record(key_for(tb, dev, "float32", problem), problem, own, 2.0, "ok")
    assert dbmod.explain(tb, dev, f32, problem) == ("user database, exact", own)


def test_a_transposed_launch_uses_the_plain_config_on_this_device(dev, db, rng):
    """On a device whose rule treats the layouts alike (PoCL: the cpu kernel for both), a config
    tuned without trans_b reaches gemm(x, w, trans_b=True), compiled with TRANS_B=1."""
    from isthmus.ops.specs import gemm as G
    from isthmus.tune.db import key_for

    f32, problem = lookup("float32"), {"m": 33, "n": 40, "k": 24}
    plain, tb = G.SPEC, G.SPEC.variant(trans_b=True)
    if plain.defaults(dev, problem, f32) != tb.defaults(dev, problem, f32):
        pytest.skip(f"the rule picks differently for trans_b on {dev.id}")
    default = plain.defaults(dev, problem, f32)
    tuned = next(p for p in plain.space(dev, problem, f32) if p != default)
    db.record(key_for(plain, dev, "float32", problem), problem, tuned, 1.0, "ok")
    dbmod.forget()
    launched = _launch(dev, OPS["gemm"], problem, f32, {"trans_b": True}, rng)
    for _, defines in launched:
        assert defines["TRANS_B"] == 1 and {k: defines[k] for k in tuned} == tuned


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_tuned_rows_kernel_config_is_what_x_at_w_t_launches(dev, db, rng, dtype):
    """The tensor-core gemm's rows kernel (ROWS=1, skinny x @ W.T) stored as the best config of the
    trans_b family is what gemm(x, w, trans_b=True) launches next, with a right result; the plain
    layout's key does not get it (the rows kernel is x @ W.T only)."""
    from isthmus.ops.specs import gemm_mma
    from isthmus.tune.db import key_for

    dt, problem = lookup(dtype), {"m": 5, "n": 40, "k": 72}
    tb = gemm_mma.SPEC.variant(trans_b=True)
    rows = dict({t.name: t.default for t in tb.tunables}, ROWS=1, RM=16, RN=1, RK=2, RU=1, SPLITK=1)
    assert tb.is_valid(rows, dev, problem, dt) and not gemm_mma.SPEC.is_valid(rows, dev, problem, dt)
    db.record(key_for(tb, dev, dtype, problem), problem, rows, 1.0, "ok")
    dbmod.forget()
    launched = _launch(dev, OPS["gemm"], problem, dt, {"trans_b": True}, rng)
    assert launched and all(d["ROWS"] == 1 and {k: d[k] for k in rows} == rows for _, d in launched)
    x = rng.standard_normal((5, 72)).astype(dt.np)
    w = rng.standard_normal((40, 72)).astype(dt.np)
    got = isthmus.ops.gemm(dev.asarray(x), dev.asarray(w), trans_b=True).to_numpy().astype(np.float64)
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    assert np.linalg.norm(got - ref) <= 6e-3 * np.linalg.norm(ref)
    plain = _launch(dev, OPS["gemm"], problem, dt, {}, rng)
    assert all(d["ROWS"] == 0 for _, d in plain)
