"""Tuning on a real device (PoCL here): failures recorded and skipped, results stored and used by
later launches in this process and in others, the CLI and its plot, the db CLI."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import isthmus
from isthmus.ops.registry import OPS
from isthmus.ops.resolve import resolve
from isthmus.dtypes import lookup as dtype
from isthmus.tune import db as dbmod
from isthmus.tune.runner import Measure

SCALE = r"""
__kernel void scale(const int n, __global const float* x, __global float* y) {
#if WG == 16
#error "this config does not compile"
#endif
    const int i = get_global_id(0);
    float acc = 0.0f;
#if WG == 256   /* far too slow: about 80 ms on an NVIDIA GPU (CUDA, NVIDIA's OpenCL), 0.1-1 s on a CPU */
#  if defined(__CUDA_ARCH__) || defined(cl_nv_pragma_unroll)
    for (int r = 0; r < 40000000; ++r) acc = acc * 0.999f + (float)r;
#  else
    for (int r = 0; r < 400000; ++r) acc = acc * 0.999f + (float)r;
#  endif
#endif
    if (i < n) {
#if WG == 32
        y[i] = 3.0f * x[i];                                            /* wrong answer */
#else
        y[i] = 2.0f * x[i] + (acc == 1.5f ? 1.0f : 0.0f);
#endif
    }
}
"""


def _scale():
    def grid(p, c):
        wg = c["WG"] if c["WG"] != 1000 else 8192  # WG=1000 launches a work-group larger than any device allows
        return ((-(-p["n"] // wg)) * wg,), (wg,)

    return isthmus.tune.declare(
        "scale_test", SCALE, entry="scale", tunables={"WG": ((16, 32, 64, 128, 256, 1000), 64)}, problem=("n",),
        grid=grid, inputs=lambda p, dt, rng: (rng.standard_normal(p["n"]).astype(dt), np.zeros(p["n"], dt)),
        scalars=lambda p: (p["n"],), output=1, reference=lambda x, y: 2 * x)


def test_failures_are_recorded_with_their_status_and_skipped(dev, tuning_db):
    kernel = _scale()
    r = isthmus.tune(kernel, device=dev, problem={"n": 1024}, strategy="exhaustive",
                     # limits far from both the fast configs (microseconds, milliseconds with 16 test workers
                     # sharing the device) and the slow one
                     measure=Measure(warmup=0, repeat=3, timeout_ms=50 if dev.kind == "cpu" else 5))
    status = {e.params["WG"]: e.status for e in r.evaluations}
    assert status == {16: "compile_error", 32: "wrong", 64: "ok", 128: "ok", 256: "timeout", 1000: "launch_error"}
    assert r.best["WG"] in (64, 128) and r.best_ms > 0
    assert r.by_status == {"compile_error": 1, "wrong": 1, "ok": 2, "timeout": 1, "launch_error": 1}
    assert "this config does not compile" in next(e.error for e in r.evaluations if e.status == "compile_error")
    runs = dbmod.user().runs("scale_test")
    # One run per config: the default's measurement is the one the search reuses.
    assert sorted(x["status"] for x in runs) == sorted(["ok"] * 2 + ["compile_error", "wrong", "timeout",
                                                                    "launch_error"])
    # A launch of the declared kernel now uses the tuned config.
    assert kernel.config(dev, {"n": 1000}) == r.best
    x = dev.asarray(np.arange(1000, dtype=np.float32))
    y = dev.zeros(1000, np.float32)
    kernel.launch(dev, {"n": 1000}, 1000, x, y)
    np.testing.assert_allclose(y.to_numpy(), 2 * np.arange(1000, dtype=np.float32))


def test_tuned_library_config_is_used_by_later_launches(dev, tuning_db, rng):
    problem = {"rows": 6, "cols": 100}
    r = isthmus.tune("softmax", device=dev, problem=problem, strategy="random", budget=4, seed=3,
                     measure=Measure(repeat=3))
    assert len(r.evaluations) == 4 and r.by_status == {"ok": 4}
    assert r.speedup >= 1.0 and r.default == OPS["softmax"].defaults(dev, problem, dtype("float32"))
    params, _ = resolve(OPS["softmax"], dev, dtype("float32"), {"rows": 7, "cols": 90})  # same bucket
    assert params == r.best
    x = rng.standard_normal((7, 90)).astype(np.float32)
    out = isthmus.ops.softmax(dev.asarray(x)).to_numpy()
    np.testing.assert_allclose(out, OPS["softmax"].sample_expect(x), rtol=1e-5, atol=1e-6)


def test_problem_must_be_named(dev, tuning_db):
    with pytest.raises(isthmus.InvalidArgumentError, match="m, n, k"):
        isthmus.tune("gemm", device=dev, problem={"n": 64})


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "isthmus.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_cli_tunes_in_another_process_and_this_one_uses_it(dev, tuning_db, tmp_path):
    env = dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db), ISTHMUS_DEVICE=dev.id, COLUMNS="200")
    png, out = tmp_path / "tune.png", tmp_path / "result.json"
    p = _cli("tune", "axpy", "--size", "n=3000", "--strategy", "random", "--budget", "3", "--seed", "2",
             "--repeat", "3", "--plot", str(png), "--json", str(out), env=env)
    assert p.returncode == 0, p.stderr
    assert "best" in p.stdout and "default" in p.stdout and "speedup over default" in p.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = json.loads(out.read_text())
    assert len(result["evaluations"]) == 3
    dbmod.reset()
    params, _ = resolve(OPS["axpy"], dev, dtype("float32"), {"n": 4000})
    assert params == result["best"]

    # db CLI: export, clear, import (validated), show.
    exported = tmp_path / "export.json"
    assert _cli("db", "export", str(exported), env=env).returncode == 0
    doc = json.loads(exported.read_text())
    assert [e["kernel"] for e in doc["entries"]] == ["axpy"]
    assert _cli("db", "clear", "--yes", env=env).returncode == 0
    bad = json.loads(exported.read_text())
    bad["entries"][0]["params"]["WG"] = 48
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    p = _cli("db", "import", str(tmp_path / "bad.json"), env=env)
    assert p.returncode == 2 and "entry 0 (axpy)" in p.stderr and "WG = 48" in p.stderr
    assert _cli("db", "import", str(exported), env=env).returncode == 0
    shown = _cli("db", "show", "--json", env=env)
    assert json.loads(shown.stdout)["entries"] == doc["entries"]


def test_tuning_process_killed_midway_leaves_a_valid_database(dev, tuning_db):
    import signal
    import time
    import warnings

    from isthmus.tune.db import Database, TuningDatabaseWarning

    env = dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db), ISTHMUS_DEVICE=dev.id)
    p = subprocess.Popen([sys.executable, "-m", "isthmus.cli", "tune", "sum", "--size",
                          "n=5000", "--strategy", "exhaustive", "--repeat", "2"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if tuning_db.exists():
                try:
                    if Database(tuning_db).counts()["runs"] >= 3:
                        break
                except Exception:
                    pass
            time.sleep(0.2)
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningDatabaseWarning)  # valid: nothing moved aside
        store = Database(tuning_db)
        counts = store.counts()
    assert counts["runs"] >= 3 and counts["best"] == 1
    assert all(r["status"] in ("ok", "compile_error", "launch_error", "timeout", "wrong") for r in store.runs())


ODD = {"n": [1, 7, 1000003], "rows": [1, 13], "cols": [1, 37, 130], "m": [1, 33], "k": [1, 19, 70]}


def test_shipped_configs_for_this_device_compute_right_at_odd_sizes(dev, rng):
    """Every bundled config that reaches this device (tuned on it, or on another device of its
    architecture) is applied to other sizes too (nearest bucket): it must be correct there, not
    only at the size it was tuned at. On an x86-64 CPU the other x86-64 classes' configs are run
    too (a config's results do not depend on the vector ISA it was tuned with)."""
    from isthmus.tune.db import bundled, key_for
    from isthmus.tune.exchange import export
    from isthmus.tune.lookup import arch_of, device_arch
    from isthmus.tune.targets import target
    from isthmus.ops.workloads import tolerance

    ident, arch = dev.identity(), device_arch(dev)

    def reaches(d: dict) -> bool:
        theirs = arch_of(d["backend"], d["vendor"], d["name"])
        return d["backend"] == ident["backend"] and (d["name"] == ident["name"] or (arch is not None and (
            theirs == arch or (arch.startswith("x86-64") and theirs is not None and theirs.startswith("x86-64")))))

    entries = [e for e in export(bundled())["entries"] if reaches(e["device"]) and e["dtype"] == "float32"]
    entries = [e for e in entries if key_for(OPS[e["kernel"]], dev, "float32", e["bucket"]).source_hash
               == e["source_hash"]]
    if not entries:
        pytest.skip(f"no shipped configs for {dev.name}")
    for e in entries:
        tgt = target(e["kernel"])
        names = tgt.family.problem
        for i in range(2):
            problem = {p: ODD.get(p, ODD["n"])[(i + j) % len(ODD.get(p, ODD["n"]))] for j, p in enumerate(names)}
            if e["kernel"] == "gemm":
                problem = {p: min(v, 70) for p, v in problem.items()}
            if not tgt.family.is_valid(e["params"], dev, problem, dtype("float32")):
                continue  # the lookup re-checks restrictions and never launches this one here
            host = tgt.inputs(problem, np.float32, rng)
            args = tuple(dev.asarray(h) for h in host)
            out = tgt.run(e["params"], args).to_numpy()
            ref = np.asarray(tgt.expect(*host))
            assert out.shape == ref.shape
            err = tgt.judge(out, ref, host)  # (the op's error kind; sample: either token at a boundary)
            assert err <= 4 * tolerance(e["kernel"], np.float32, problem.get("k", 1)), (e["kernel"], e["params"],
                                                                                       problem, err)


def test_two_processes_tuning_into_one_database_lose_no_records(dev, tuning_db, tmp_path):
    env = dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db), ISTHMUS_DEVICE=dev.id)
    jobs = [("axpy", "n=2000", 5), ("transpose", "rows=30 cols=40", 4), ("axpy", "n=2000", 5)]
    procs = []
    for i, (kernel, size, budget) in enumerate(jobs):
        out = tmp_path / f"r{i}.json"
        procs.append((out, subprocess.Popen(
            [sys.executable, "-m", "isthmus.cli", "tune", kernel, "--size", *size.split(), "--strategy", "random",
             "--seed", str(i), "--budget", str(budget), "--repeat", "2", "--json", str(out)], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
    expected = 0
    for out, p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
        r = json.loads(out.read_text())
        evaluated = [e["params"] for e in r["evaluations"]]
        expected += len(evaluated) + (r["default"] not in evaluated)  # the default is measured (and stored) once
    dbmod.reset()
    store = dbmod.user()
    assert store.counts()["runs"] == expected
    assert store.counts()["best"] == 2  # axpy and transpose: one bucket each, both processes' axpy runs merged


# ---- Ctrl-C and resuming (issue 26, item 10) ---------------------------------------------------
def test_ctrl_c_keeps_the_best_so_far_and_the_same_call_goes_on_from_there(dev, tuning_db):
    from isthmus.tune import TuneInterrupted
    from isthmus.tune.space import Space

    problem, seen = {"n": 3000}, []

    def interrupt_at_the_third(ev):  # Ctrl-C arriving while the search runs, at a known point
        seen.append(ev)
        if len(seen) == 3:
            raise KeyboardInterrupt

    kwargs = dict(device=dev, problem=problem, strategy="exhaustive", measure=Measure(warmup=0, repeat=2))
    with pytest.raises(TuneInterrupted) as stop:
        isthmus.tune("axpy", budget=10, on_evaluation=interrupt_at_the_third, **kwargs)
    first = stop.value.result
    assert isinstance(stop.value, KeyboardInterrupt)  # still a Ctrl-C for code that does not know it
    assert len(first.evaluations) == 3
    ok = [e for e in first.evaluations if e.status == "ok"] + [
        type(first.evaluations[0])(first.default, "ok", first.default_ms)]
    fastest = min(ok, key=lambda e: e.time_ms)
    assert first.best == fastest.params and first.best_ms == fastest.time_ms
    stored = dbmod.user().runs("axpy")
    evaluated = [dict(e.params) for e in first.evaluations]
    assert len(stored) == 3 + (dict(first.default) not in evaluated)  # every evaluation is in the database
    assert json.loads(dbmod.user().best()[0]["params"]) == dict(first.best)

    second = isthmus.tune("axpy", budget=4, **kwargs)
    space = isthmus.tune.prepare("axpy", device=dev, problem=problem, database=False).space
    before = {Space.key(p) for p in evaluated}
    # exhaustive goes on in the space's order, skipping what the first run measured
    expected = [c for c in space.configs if Space.key(c) not in before or c == dict(first.default)][:4]
    assert [dict(e.params) for e in second.evaluations] == expected
    assert {Space.key(e.params) for e in second.earlier} == before - {Space.key(dict(first.default))}
    earlier_ok = [e.time_ms for e in first.evaluations if e.status == "ok" and e.params != first.default]
    assert second.best_ms <= min(earlier_ok, default=math.inf)  # the earlier runs' configs compete for best
    assert len(dbmod.user().runs("axpy")) == len(stored) + 4 + (dict(first.default) not in expected)


def test_a_config_list_is_searched_as_given(dev, tuning_db):
    """``configs=``: the space is the listed configs (each over the tunables' defaults), e.g. timed
    one by one with the exhaustive strategy; a config outside the space is a typed error."""
    spec = OPS["softmax"]
    problem = {"rows": 9, "cols": 50}
    space = list(spec.space(dev, problem, dtype("float32")))
    listed = [space[0], space[-1], {k: v for k, v in space[len(space) // 2].items() if k != "VARIANT"}]
    r = isthmus.tune("softmax", device=dev, problem=problem, strategy="exhaustive", configs=listed, budget=10,
                     measure=Measure(repeat=1))
    defaults = {t.name: t.default for t in spec.tunables}
    want = [dict(c) for c in (space[0], space[-1], {**defaults, **listed[2]})]
    assert r.space_size == len({tuple(sorted(c.items())) for c in want})
    assert [dict(e.params) for e in r.evaluations] == list({tuple(sorted(c.items())): c for c in want}.values())
    with pytest.raises(isthmus.InvalidArgumentError, match="not in its space"):
        isthmus.tune("softmax", device=dev, problem=problem, configs=[{**space[0], "WG": 3}])
    with pytest.raises(isthmus.InvalidArgumentError, match="dicts of its tunables"):
        isthmus.tune("softmax", device=dev, problem=problem, configs=[{"NOPE": 1}])
    with pytest.raises(isthmus.InvalidArgumentError, match="'budgt' is not an argument of tune"):
        isthmus.tune("softmax", device=dev, problem=problem, budgt=3)



def test_among_equal_times_the_result_and_the_database_name_one_best(dev, tuning_db, monkeypatch):
    """Configs measured equal (a GPU's timer resolution at a tiny size): the result's best is the one the
    database keeps, the first one recorded (here the default, measured first), not a later equal one."""
    from isthmus.tune import runner

    real = runner.Bench.evaluate

    def evaluate(self, params, timeout_ms):  # the timer's edge: every correct config takes 0.125 ms
        ev = real(self, params, timeout_ms)
        return runner.Evaluation(ev.params, ev.status, 0.125 if ev.status == "ok" else ev.time_ms, ev.error)

    monkeypatch.setattr(runner.Bench, "evaluate", evaluate)
    kernel = _scale()
    r = isthmus.tune(kernel, device=dev, problem={"n": 1024}, strategy="exhaustive", configs=[{"WG": 128}, {"WG": 64}],
                     measure=Measure(warmup=0, repeat=1))
    (best,) = dbmod.user().best()
    assert json.loads(best["params"]) == r.best == {"WG": 64} and r.best_ms == 0.125
    assert kernel.config(dev, {"n": 1000}) == r.best
