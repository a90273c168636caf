"""``isthmus db`` (isthmus.cli.db): asking before deleting, readable when piped."""
from __future__ import annotations

import json

from isthmus.tune import db as dbmod

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
