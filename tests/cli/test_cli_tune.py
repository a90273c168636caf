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


def test_tune_cli_dtype_and_variant_flags_tune_what_the_call_launches(dev, tuning_db, tmp_path, rng, capsys):
    """``isthmus tune gemm --dtype bfloat16 --trans-b``: the tensor-core family compiled for B stored
    N x K, the kernel that ``gemm(x, w, trans_b=True)`` on bfloat16 launches, with the stored best."""
    import json

    import ml_dtypes

    import isthmus
    from isthmus.bench import recording

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
