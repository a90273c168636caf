"""tune/storage.py: one SQLite file of tuning runs: records and the best per key, two processes
writing at once, a process killed while writing, damaged or future files, rows that do not parse,
paths with URI characters. Uses the stand-in device of test_tune_db (no kernels are run here)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import pytest

from isthmus.tune import db as dbmod
from isthmus.tune.db import Database, TuningDatabaseWarning
from test_tune_db import AXPY, F32, FakeDevice, _insert_best, _record


def test_records_every_run_and_keeps_the_best(db):
    dev = FakeDevice()
    _record(db, dev, 1000, {"WG": 128, "VPT": 4}, 2.0)
    _record(db, dev, 1000, {"WG": 256, "VPT": 4}, 1.0)
    _record(db, dev, 1000, {"WG": 512, "VPT": 4}, 1.5)
    _record(db, dev, 1000, {"WG": 64, "VPT": 4}, None, "compile_error")
    _record(db, dev, 1000, {"WG": 32, "VPT": 4}, 0.1, "wrong")  # fast but wrong: never the best
    assert db.counts() == {"runs": 5, "best": 1}
    assert [r["status"] for r in db.runs()] == ["ok", "ok", "ok", "compile_error", "wrong"]
    assert json.loads(db.best()[0]["params"]) == {"VPT": 4, "WG": 256}


_WRITER = """
import sys
from isthmus.tune.db import Database, key_for
from isthmus.ops.registry import OPS
sys.path.insert(0, {here!r})
from test_tune_db import FakeDevice
db = Database(sys.argv[1])
dev = FakeDevice()
tag, count = int(sys.argv[2]), int(sys.argv[3])
print("ready", flush=True)
for i in range(count):
    wg = (32, 64, 128, 256, 512, 1024)[i % 6]
    db.record(key_for(OPS["axpy"], dev, "float32", {{"n": 1000}}), {{"n": 1000}}, {{"WG": wg, "VPT": 1}},
              1.0 + tag + i * 1e-3, "ok")
"""


def _writer(path, tag, count):
    script = _WRITER.format(here=os.path.dirname(__file__))
    return subprocess.Popen([sys.executable, "-c", script, str(path), str(tag), str(count)], stdout=subprocess.PIPE,
                            text=True)


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite"
    procs = [_writer(path, tag, 300) for tag in (0, 1)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    store = Database(path)
    assert store.counts() == {"runs": 600, "best": 1}
    assert store.best()[0]["time_ms"] == pytest.approx(1.0)


def test_a_process_killed_while_writing_leaves_a_valid_database(tmp_path):
    path = tmp_path / "killed.sqlite"
    p = _writer(path, 0, 10 ** 6)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    p.send_signal(signal.SIGKILL)
    p.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningDatabaseWarning)  # not moved aside: it is fine
        store = Database(path)
    n = store.counts()["runs"]
    assert n > 0
    _record(store, FakeDevice(), 1000, {"WG": 64, "VPT": 2}, 0.5)
    assert store.counts()["runs"] == n + 1


def _damaged(path, how):
    store = Database(path)
    for i in range(400):
        _record(store, FakeDevice(), 1 << (i % 20), {"WG": 64, "VPT": 2}, 1.0 + i)
    store.close()
    if how == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "future":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 99")
        conn.commit()
        conn.close()


@pytest.mark.parametrize("how", ["garbage", "truncated", "future"])
def test_damaged_or_future_file_is_moved_aside_and_rebuilt(tmp_path, monkeypatch, how):
    path = tmp_path / "tuning.sqlite"
    _damaged(path, how)
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(path))
    dbmod.reset()
    try:
        with pytest.warns(TuningDatabaseWarning, match="moved it to"):
            store = dbmod.user()
        assert store.counts() == {"runs": 0, "best": 0}
        assert any(p.name.startswith("tuning.sqlite.bad-") for p in tmp_path.iterdir())
        assert dbmod.lookup(AXPY, FakeDevice(), F32, {"n": 1 << 5}) is None  # defaults, not a wrong config
        _record(store, FakeDevice(), 1000, {"WG": 64, "VPT": 2}, 0.5)
        assert store.counts()["best"] == 1
    finally:
        dbmod.reset()


BAD_ROWS = [({"bucket": "[1024]"}, '{"WG": 64, "VPT":'),  # malformed JSON params (the exact bucket)
            ({"bucket": "[0]"}, '{"WG": 64, "VPT": 2}'),
            ({"bucket": "5"}, '{"WG": 64, "VPT": 2}'),
            ({"bucket": "[-4]"}, '{"WG": 64, "VPT": 2}'),
            ({"bucket": '["x"]'}, '{"WG": 64, "VPT": 2}'),
            ({"bucket": "[1024, 3]"}, '{"WG": 64, "VPT": 2}'),
            ({"bucket": "not json"}, '{"WG": 64, "VPT": 2}'),
            ({"bucket": "[2048]"}, '[64, 2]'),
            ({"bucket": "[4096]"}, '{"WG": "sixty-four", "VPT": 2}')]


def test_bad_rows_are_skipped_with_one_warning(db):
    dev = FakeDevice()
    _record(db, dev, 1 << 16, {"WG": 128, "VPT": 2}, 1.0)
    for over, params in BAD_ROWS:
        _insert_best(db.path, over, params)
    dbmod.forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the exact bucket's row is bad: the nearest good one is used, never an error
        assert dbmod.explain(AXPY, dev, F32, {"n": 1000}) == ("user database, nearest bucket", {"VPT": 2, "WG": 128})
        for n in (1, 5, 3000, 1 << 16):
            assert dbmod.lookup(AXPY, dev, F32, {"n": n}) == {"VPT": 2, "WG": 128}
    bad = [w for w in caught if issubclass(w.category, TuningDatabaseWarning)]
    assert len(bad) == 1 and "bad values" in str(bad[0].message)


@pytest.mark.parametrize("name", ["100%", "a%20b", "c#d", "e?f", "g?mode=ro", "h%3Fi"])
def test_database_paths_with_uri_characters(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "tuning.sqlite"
    store = Database(path)
    _record(store, FakeDevice(), 1000, {"WG": 128, "VPT": 4}, 2.0)
    store.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningDatabaseWarning)  # a valid file is never moved aside
        again = Database(path)
    assert again.counts() == {"runs": 1, "best": 1}
    again.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no stray files next to the folder
    assert not [p for p in folder.iterdir() if ".bad-" in p.name]
    path.write_bytes(b"not a database at all" * 50)  # and a corrupt one is still detected
    with pytest.warns(TuningDatabaseWarning, match="moved it to"):
        Database(path).close()


# ---- hostile import files (item 9) -------------------------------------------------------------
