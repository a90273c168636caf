"""``isthmus tune`` (isthmus.cli.tune): the --plot check, the table and the figure."""
from __future__ import annotations

import os
import sys

import pytest

from isthmus.cli import tune as tune_cli
from isthmus.tune import TuneResult
from isthmus.tune.runner import Evaluation


def test_tune_plot_checks_matplotlib_before_the_search(tmp_path, monkeypatch, capsys):
    def search_must_not_start(*a, **k):
        raise AssertionError("the search ran before --plot was checked")

    pytest.importorskip("matplotlib")  # imported now, so that the context below puts the real one back
    monkeypatch.setattr(sys.modules["isthmus.tune"], "prepare", search_must_not_start)
    argv = ["softmax", "--size", "rows=8", "cols=8", "--plot", str(tmp_path / "p.png")]
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "matplotlib", None)  # not importable
        assert tune_cli.main(argv) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
    assert tune_cli.main(argv[:-1] + [str(tmp_path / "missing" / "p.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def _result(evaluations, default_ms, default=None) -> TuneResult:
    default = default or {"WG": 64, "VPT": 4}
    ok = [e for e in evaluations if e.status == "ok"] + [Evaluation(default, "ok", default_ms)]
    best = min(ok, key=lambda e: e.time_ms)
    return TuneResult("softmax", "opencl:0", {"rows": 256, "cols": 1000}, "float32", "anneal", 0, 30,
                      dict(best.params), best.time_ms, default, default_ms, evaluations, 1.0)


def _rows(table) -> list[str]:
    from rich.console import Console

    console = Console(width=200, record=True, file=open(os.devnull, "w"))
    console.print(table)
    return [line for line in console.export_text().splitlines() if "WG=" in line]


def test_tune_table_shows_the_default_as_best_when_nothing_beat_it():
    slower = [Evaluation({"WG": 32, "VPT": 2}, "ok", 2.0), Evaluation({"WG": 128, "VPT": 8}, "ok", 3.0),
              Evaluation({"WG": 256, "VPT": 1}, "wrong", None)]
    rows = _rows(tune_cli.table(_result(slower, default_ms=1.0)))
    assert rows[0].split("│")[1].strip() == "best (default)" and "WG=64 VPT=4" in rows[0]
    assert "0.50x" in rows[1] and "0.33x" in rows[2] and len(rows) == 3  # the default is listed once


def test_tune_table_ranks_a_faster_config_above_the_default():
    evs = [Evaluation({"WG": 32, "VPT": 2}, "ok", 0.5), Evaluation({"WG": 32, "VPT": 2}, "ok", 0.4),
           Evaluation({"WG": 128, "VPT": 8}, "ok", 3.0)]
    ranked = tune_cli.ranking(_result(evs, default_ms=1.0))
    assert ranked == [({"WG": 32, "VPT": 2}, 0.4), ({"WG": 64, "VPT": 4}, 1.0), ({"WG": 128, "VPT": 8}, 3.0)]
    rows = _rows(tune_cli.table(_result(evs, default_ms=1.0)))
    assert rows[0].split("│")[1].strip() == "best" and "2.50x" in rows[0]
    assert rows[1].split("│")[1].strip() == "#2 (default)"


def test_tune_figure_names_what_was_tuned_and_shows_default_and_best():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    evs = [Evaluation({"WG": 2 ** (5 + i % 4), "VPT": 1 + i % 3}, "ok", 0.02 + 0.03 * i) for i in range(30)]
    evs.append(Evaluation({"WG": 1024, "VPT": 8}, "compile_error", None, "too big"))
    fig = tune_cli.figure(_result(evs, default_ms=0.3), device_name="pthread-skylake-avx512")
    ax = fig.axes[0]
    title = ax.get_title()
    for part in ("softmax", "float32", "rows=256 cols=1000", "opencl:0 (pthread-skylake-avx512)"):
        assert part in title
    assert "µs" in ax.get_ylabel()  # times under a millisecond read in µs
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all("$" not in t and "10^" not in t for t in labels), labels  # plain numbers
    assert any(abs(line.get_ydata()[0] - 300.0) < 1e-9 for line in ax.get_lines())  # default: 0.3 ms = 300 µs
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "best: 20 µs" in texts and "WG = 32" in texts and "VPT = 1" in texts
    plt.close(fig)


# ---- checked before anything runs; Ctrl-C; resuming (issue 26, items 10, 11) ----------------------
@pytest.mark.parametrize("argv, says", [
    (["gemm", "--size", "m=0", "n=64", "k=64"], "size m must be at least 1, got --size m=0; e.g. --size m=4096 n=64 k=64"),
    (["gemm", "--size", "m=-8", "n=64", "k=64"], "size m must be at least 1"),
    (["gemm", "--size", "m=64", "n=64"], "missing size k; gemm's sizes are m, n, k, e.g. --size m=64 n=64 k=4096"),
    (["softmax", "--size", "rows=8", "colz=8"], "unknown size 'colz'"),
    (["axpy", "--size", "n=1000", "--budget", "0"], "got --budget 0 (leave it out for 50, or e.g. --budget 200)"),
    (["axpy", "--size", "n=1000", "--budget", "-2"], "at least 1; got --budget -2"),
    (["axpy", "--size", "n=1000", "--seconds", "0"], "got --seconds 0 (leave it out"),
    (["axpy", "--size", "n=10", "n=20"], "--size n given twice"),
])
def test_bad_arguments_are_one_line_before_any_progress_bar(argv, says, tuning_db, capsys, monkeypatch):
    monkeypatch.setattr(sys.modules["isthmus.tune"], "run", lambda *a, **k: pytest.fail("the search started"))
    assert tune_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("isthmus tune: InvalidArgumentError: ") and says in err, err
    assert len(err.strip().splitlines()) == 1 and "{" not in err  # one line, no Python dict
    assert not tuning_db.exists()  # nothing ran, nothing was stored


def test_the_plan_shows_the_space_and_the_budget_before_the_search():
    from isthmus.tune.arguments import CLI

    job = sys.modules["isthmus.tune"].prepare("gemm", problem={"m": 512, "n": 512, "k": 512}, database=False,
                                              syntax=CLI)
    text = tune_cli._plan(job)
    assert f"{len(job.space):,} configs in the space; budget 50 configs" in text and "--budget N" in text


def _runs(path) -> list:
    import sqlite3

    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT params, status, time_ms FROM runs ORDER BY id").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


def test_ctrl_c_prints_the_best_so_far_and_the_same_command_goes_on(dev, tuning_db):
    import json
    import signal
    import subprocess
    import time

    env = {**os.environ, "ISTHMUS_TUNING_DB": str(tuning_db), "ISTHMUS_DEVICE": dev.id, "COLUMNS": "200"}
    argv = [sys.executable, "-m", "isthmus", "tune", "sum", "--size", "n=5000", "--strategy", "exhaustive",
            "--budget", "40", "--repeat", "2"]
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while len(_runs(tuning_db)) < 3 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert len(_runs(tuning_db)) >= 3, "the tuner did not record three evaluations"
        p.send_signal(signal.SIGINT)  # Ctrl-C, after the third evaluation was stored
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "interrupted after" in err and "run the same command again" in err
    best_row = next(line for line in out.splitlines() if "│ best" in line)
    stored = [(json.loads(params), ms) for params, status, ms in _runs(tuning_db) if status == "ok"]
    params, ms = min(stored, key=lambda r: r[1])
    printed = set(best_row.split("│")[2].split())
    assert printed == {f"{k}={v}" for k, v in params.items()}, (best_row, params)  # printed = stored best
    measured = len({json.dumps(p, sort_keys=True) for p, _ in stored})

    again = subprocess.run(argv[:-4] + ["--budget", "1", "--repeat", "2"], env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert "configs measured by earlier runs are reused" in again.stderr
    assert "(+" in again.stdout and "from earlier runs)" in again.stdout
    assert measured >= 2


def test_ctrl_c_before_the_search_is_one_line(monkeypatch, capsys):
    def ctrl_c(*a, **k):  # Ctrl-C while the space is being built
        raise KeyboardInterrupt

    monkeypatch.setattr(sys.modules["isthmus.tune"], "prepare", ctrl_c)
    assert tune_cli.main(["axpy", "--size", "n=1000"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "isthmus tune: interrupted before the search started; nothing was measured"


def test_tune_cli_dtype_and_variant_flags_tune_what_the_call_launches(dev, tuning_db, tmp_path, rng, capsys):
    """``isthmus tune gemm --dtype bfloat16 --trans-b``: the tensor-core family compiled for B stored
    N x K, the kernel that ``gemm(x, w, trans_b=True)`` on bfloat16 launches, with the stored best."""
    import json

    import ml_dtypes

    import isthmus
    from isthmus.record import recording

    if not dev.supports("bfloat16"):
        pytest.skip(f"{dev.id} has no bfloat16")
    out = tmp_path / "r.json"
    argv = ["gemm", "--device", dev.id, "--dtype", "bfloat16", "--trans-b", "--size", "m=20", "n=36", "k=40",
            "--strategy", "random", "--budget", "2", "--repeat", "1", "--json", str(out)]
    assert tune_cli.main(argv) == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["kernel"] == "gemm_mma" and result["flags"] == {"trans_b": True} and result["dtype"] == "bfloat16"
    assert "gemm_mma trans_b bfloat16" in capsys.readouterr().out  # the table's title names the variant
    x = dev.asarray(rng.standard_normal((19, 40)).astype(ml_dtypes.bfloat16))
    w = dev.asarray(rng.standard_normal((33, 40)).astype(ml_dtypes.bfloat16))
    with recording(dev) as rec:
        isthmus.ops.gemm(x, w, trans_b=True)
    defines = rec.launches[0][0].program.defines
    assert defines["TRANS_B"] == 1 and {k: defines[k] for k in result["best"]} == result["best"]
    # a flag the op does not have: a typed error naming the op's flags, before any search
    assert tune_cli.main(["axpy", "--device", dev.id, "--trans-a", "--size", "n=100", "--budget", "2"]) == 2
    assert "not an argument of tune() nor a variant flag of axpy" in capsys.readouterr().err
