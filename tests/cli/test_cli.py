"""The command line as a user meets it (isthmus.cli): entry points, help, version, bench's output
folder and NumPy figure."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import isthmus
from isthmus import cli
from isthmus.cli import bench, devices


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


def test_devices_table_at_80_columns_never_cuts_the_id():
    """Issue 26, item 17: the id column (what users copy) is never cut or wrapped; other cells
    fold over lines instead of ending in an ellipsis."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    rows = [SimpleNamespace(id=i, name="pthread-skylake-avx512-Intel(R) Xeon(R) Processor of a long name",
                            vendor="GenuineIntel", kind="cpu", memory=1234 * 2 ** 30, compute_units=123456,
                            max_work_group_size=4096, driver_version="3.1+debian (build 2026-12-04)",
                            dtypes=("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"))
            for i in ("opencl:0", "opencl:12-long-id-98765")]
    console = Console(width=80, file=io.StringIO(), record=True)
    console.print(devices.table(rows))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines) and "…" not in "".join(lines)
    body = [line.strip("│").split("│") for line in lines if line.startswith("│")]
    firsts = [cells[0].strip() for cells in body]
    assert "opencl:0" in firsts and "opencl:12-long-id-98765" in firsts  # each whole, on one line
    columns = ["".join(cells[i].replace(" ", "") for cells in body) for i in range(len(body[0]))]
    assert columns[4] == "1234.0GiB" * 2 and columns[5] == "123456" * 2  # numbers folded, never cut
    assert columns[1] == "pthread-skylake-avx512-Intel(R)Xeon(R)Processorofalongname" * 2
