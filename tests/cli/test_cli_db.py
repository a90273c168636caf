"""``isthmus db`` (isthmus.cli.db): asking before deleting, readable when piped."""
from __future__ import annotations

import json

from isthmus.tune import db as dbmod
from isthmus.tune.exchange import export

from test_cli import _isthmus


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


def _columns(table, width: int) -> tuple[list[str], list[str]]:
    """The table rendered at ``width`` columns: (its lines, each body column's folded text joined)."""
    import io

    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    body = [line for line in lines if line.startswith("│")]
    cells = [line.strip("│").split("│") for line in body]
    joined = ["".join(row[i].replace(" ", "") for row in cells) for i in range(len(cells[0]))]
    return lines, joined


def test_db_show_at_80_columns_folds_and_never_cuts(tmp_path):
    """Issue 26, item 17: at 80 columns every cell is whole (folded over lines), no ellipsis."""
    from isthmus.cli import db as dbcli

    path = tmp_path / "tuning.sqlite"
    name = _db_with_a_long_row(path)
    doc = export(dbmod.Database(path))
    lines, joined = _columns(dbcli.table(doc, "tuning database"), 80)
    assert all(len(line) <= 80 for line in lines) and "…" not in "".join(lines)
    e = doc["entries"][0]
    expected = ["softmax", "float32", f"opencl {name}", "3.1+debian", "rows=256 cols=1024", "CACHE=1 VPT=8 WG=256",
                "0.5", "3.00x", "older"]
    assert joined == [x.replace(" ", "") for x in expected], joined
    assert e["device"]["name"] == name


def test_db_export_and_show_filter_by_kernel_and_device(tmp_path, dev):
    path = tmp_path / "tuning.sqlite"
    store = dbmod.Database(path)
    ident = dev.identity()
    here = dbmod.Key("axpy", "a" * 64, "{}", ident["backend"], ident["vendor"], ident["name"], ident["driver"],
                     "float32", (1024,))
    # another machine's GPU: a name no test device has (the GPU machine's own is an H200)
    there = dbmod.Key("axpy", "a" * 64, "{}", "cuda", "NVIDIA", "NVIDIA Z900", "13.0", "float32", (1024,))
    gemm = dbmod.Key("gemm", "b" * 64, "{}", "cuda", "NVIDIA", "NVIDIA Z900", "13.0", "float32", (64, 64, 64))
    for key in (here, there):
        store.record(key, {"n": 1000}, {"WG": 256, "VPT": 4}, 0.5, "ok")
    store.record(gemm, {"m": 64, "n": 64, "k": 64}, {"TM": 64}, 0.5, "ok")
    store.close()
    env = {"ISTHMUS_TUNING_DB": str(path)}

    def exported(*flags) -> list:
        r = _isthmus("db", "export", "-", *flags, env=env)
        assert r.returncode == 0, r.stderr
        return sorted((e["kernel"], e["device"]["name"]) for e in json.loads(r.stdout)["entries"])

    assert len(exported()) == 3
    assert exported("--device", "z900") == [("axpy", "NVIDIA Z900"), ("gemm", "NVIDIA Z900")]  # part of the name
    assert exported("--device", dev.id) == [("axpy", ident["name"])]  # a device id of this machine
    assert exported("--kernel", "gemm") == [("gemm", "NVIDIA Z900")]
    assert exported("--kernel", "axpy", "--device", "Z900") == [("axpy", "NVIDIA Z900")]
    assert exported("--kernel", "axpy", "--kernel", "gemm") == exported()
    r = _isthmus("db", "export", "-", "--kernel", "gemmm", env=env)
    assert r.returncode == 2 and "--kernel gemmm: no such kernel" in r.stderr
    shown = _isthmus("db", "show", "--device", "Z900", env=env)
    words = " ".join(shown.stdout.split())  # (the title folds where the database's path is long)
    assert shown.returncode == 0 and "2 of 3 best configs" in words and ident["name"] not in shown.stdout
