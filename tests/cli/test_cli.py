"""The command line as a user meets it: entry points, help, version, the tuning database verbs
(asking before deleting, readable when piped), bench's output folder and NumPy figure, tune's
--plot check, table and figure."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import isthmus
from isthmus import bench, cli
from isthmus.tune import TuneResult
from isthmus.tune import cli as tune_cli
from isthmus.tune import db as dbmod
from isthmus.tune.runner import Evaluation


def _isthmus(*args, env=None, stdin=subprocess.DEVNULL, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "isthmus", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, stdin=stdin, cwd=cwd)


def test_python_m_isthmus_version_and_bare_help():
    r = _isthmus("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"isthmus {isthmus.__version__}"
    r = _isthmus()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: isthmus")
    for verb in ("devices", "demo", "bench", "java", "tune", "db", "maven-install", "jvm-home"):
        assert f"    {verb}" in r.stdout
    assert _isthmus("nonsense").returncode == 2


def _db_with_a_long_row(path) -> str:
    store = dbmod.Database(path)
    params = {"WG": 256, "VPT": 8, "CACHE": 1}
    name = "pthread-skylake-avx512-Intel(R) Xeon(R) Processor of a rather long marketing name"
    key = dbmod.Key("softmax", "a" * 64, "{}", "opencl", "GenuineIntel", name, "3.1+debian", "float32", (256, 1024))
    store.record(key, {"rows": 256, "cols": 1000}, params, 0.5, "ok", default_ms=1.5)
    store.close()
    return name


def test_db_clear_asks_and_refuses_without_a_terminal(tmp_path):
    path = tmp_path / "tuning.sqlite"
    _db_with_a_long_row(path)
    env = {"ISTHMUS_TUNING_DB": str(path)}
    r = _isthmus("db", "clear", env=env)  # stdin is not a terminal
    assert r.returncode == 2
    assert "--yes" in r.stderr and "not deleting 1 tuned configs" in r.stderr
    assert dbmod.Database(path).counts()["best"] == 1
    r = _isthmus("db", "clear", "--yes", env=env)
    assert r.returncode == 0, r.stderr
    assert dbmod.Database(path).counts() == {"runs": 0, "best": 0}


def test_db_show_piped_keeps_every_row_whole(tmp_path):
    path = tmp_path / "tuning.sqlite"
    name = _db_with_a_long_row(path)
    r = _isthmus("db", "show", env={"ISTHMUS_TUNING_DB": str(path), "COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    row = [line for line in r.stdout.splitlines() if "softmax" in line]
    assert len(row) == 1, r.stdout  # one line: not wrapped
    assert name in row[0] and "CACHE=1 VPT=8 WG=256" in row[0] and "…" not in r.stdout
    doc = json.loads(_isthmus("db", "show", "--json", env={"ISTHMUS_TUNING_DB": str(path)}).stdout)
    assert doc["entries"][0]["params"] == {"CACHE": 1, "VPT": 8, "WG": 256}


def test_bench_writes_where_out_says_and_defaults_to_the_current_folder(dev, tmp_path, monkeypatch):
    assert cli.parser().parse_args(["bench"]).out == "."
    result = {"device": dev.info(), "machine": bench.machine(), "sizes": {}, "copy_GBps": 1.0, "kernels": [],
              "overhead": [], "date": "today"}
    monkeypatch.setattr(bench, "run", lambda d, quick=False: result)
    monkeypatch.chdir(tmp_path)
    assert bench.main(dev.id, quick=True, out=str(tmp_path / "deep" / "er")) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert len(written) == 2 and all(w.startswith("deep/er/bench-") for w in written), written
    assert bench.main(dev.id, quick=True) == 0
    assert len(list(tmp_path.glob("bench-*-quick.*"))) == 2


def test_bench_numpy_figure_is_never_one_cold_call():
    calls = []

    def numpy_like():  # the first call pays a cold start, as NumPy's does (page faults, thread pool)
        calls.append(None)
        time.sleep(0.3 if len(calls) == 1 else 0.002)

    ms = bench.host_numpy_ms(numpy_like)
    assert len(calls) >= 4 and ms < 100


def test_tune_plot_checks_matplotlib_before_the_search(tmp_path, monkeypatch, capsys):
    def search_must_not_start(*a, **k):
        raise AssertionError("the search ran before --plot was checked")

    pytest.importorskip("matplotlib")  # imported now, so that the context below puts the real one back
    monkeypatch.setattr(sys.modules["isthmus.tune"], "tune", search_must_not_start)
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
