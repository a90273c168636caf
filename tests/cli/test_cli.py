"""The command line as a user meets it (isthmus.cli): entry points, help, version, bench's output
folder and NumPy figure."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import isthmus
from isthmus import bench, cli


def _isthmus(*args, env=None, stdin=subprocess.DEVNULL, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "isthmus", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, stdin=stdin, cwd=cwd)


def test_python_m_isthmus_and_isthmus_cli_version_and_bare_help():
    r = _isthmus("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"isthmus {isthmus.__version__}"
    r = _isthmus()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: isthmus")
    for verb in ("devices", "demo", "bench", "java", "tune", "db", "maven-install", "jvm-home"):
        assert f"    {verb}" in r.stdout
    assert _isthmus("nonsense").returncode == 2
    r = subprocess.run([sys.executable, "-m", "isthmus.cli", "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == f"isthmus {isthmus.__version__}"  # the Makefile's spelling


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
