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
from isthmus.tune.exchange import export
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


def _filled(path) -> None:
    store = Database(path)
    for i in range(400):
        _record(store, FakeDevice(), 1 << (i % 20), {"WG": 64, "VPT": 2}, 1.0 + i)
    store.close()


def _damage_pages(path) -> None:
    """Keep the 100-byte header (isthmus' application id in it), scramble the pages after it."""
    data = bytearray(path.read_bytes())
    data[100:] = os.urandom(len(data) - 100)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "scrambled"])
def test_a_damaged_isthmus_database_is_set_aside_and_rebuilt(tmp_path, monkeypatch, how):
    path = tmp_path / "tuning.sqlite"
    _filled(path)
    if how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        _damage_pages(path)
    damaged = path.read_bytes()
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(path))
    dbmod.reset()
    try:
        with pytest.warns(TuningDatabaseWarning, match=r"was damaged .*isthmus moved it to .*started a new one"):
            store = dbmod.user()
        assert store.counts() == {"runs": 0, "best": 0}
        aside = [p for p in tmp_path.iterdir() if p.name.startswith("tuning.sqlite.bad-")]
        assert len(aside) == 1 and aside[0].read_bytes() == damaged  # set aside whole, not rewritten
        assert dbmod.lookup(AXPY, FakeDevice(), F32, {"n": 1 << 5}) is None  # defaults, not a wrong config
        _record(store, FakeDevice(), 1000, {"WG": 64, "VPT": 2}, 0.5)
        assert store.counts()["best"] == 1
    finally:
        dbmod.reset()


def _not_isthmus(path, what) -> None:
    if what == "folder":
        path.mkdir()
        (path / "notes.txt").write_text("the user's own file")
    elif what == "text":
        path.write_text("tuning notes: gemm likes 64x64 tiles\n" * 40)
    elif what == "other-sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE photos (name TEXT)")
        conn.execute("INSERT INTO photos VALUES ('cat.png')")
        conn.commit()
        conn.close()
    elif what == "other-app-id":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA application_id = 1179602242")  # another application's file format
        conn.execute("CREATE TABLE runs (x)")
        conn.commit()
        conn.close()
    elif what == "newer-isthmus":
        _filled(path)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 99")
        conn.commit()
        conn.close()
    elif what == "damaged-unmarked":  # damaged, and without isthmus' id: isthmus cannot tell it is its own
        _filled(path)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA application_id = 0")
        conn.commit()
        conn.close()
        _damage_pages(path)


def _snapshot(folder) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


NOT_ISTHMUS = {"folder": "is a folder", "text": "not an SQLite file", "other-sqlite": "another application",
               "other-app-id": "another application", "newer-isthmus": "newer isthmus",
               "damaged-unmarked": "cannot recognise as its own"}


@pytest.mark.parametrize("what", sorted(NOT_ISTHMUS))
def test_a_path_that_is_not_an_isthmus_database_is_refused_and_left_as_it_is(tmp_path, monkeypatch, what):
    from isthmus.errors import DatabaseError

    path = tmp_path / "tuning.sqlite"
    _not_isthmus(path, what)
    before = _snapshot(tmp_path)
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(path))
    dbmod.reset()
    try:
        with pytest.raises(DatabaseError, match=NOT_ISTHMUS[what]) as caught:
            dbmod.user()
        assert str(path) in str(caught.value) and "ISTHMUS_TUNING_DB" in str(caught.value)
        # a launch is not stopped: it warns, naming the path, and uses the next source
        with pytest.warns(TuningDatabaseWarning, match="lookup failed.*" + NOT_ISTHMUS[what]):
            assert dbmod.lookup(AXPY, FakeDevice(), F32, {"n": 1000}) is None
        r = subprocess.run([sys.executable, "-m", "isthmus", "db", "show"], capture_output=True, text=True,
                           timeout=120, env={**os.environ, "ISTHMUS_TUNING_DB": str(path)})
        assert r.returncode == 2 and "DatabaseError" in r.stderr and str(path) in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    finally:
        dbmod.reset()
    assert _snapshot(tmp_path) == before  # nothing moved, changed or added (no lock file either)


def test_an_isthmus_database_made_before_the_application_id_is_kept_and_marked(tmp_path):
    path = tmp_path / "tuning.sqlite"
    _filled(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 0")  # what isthmus wrote before it marked its files
    conn.commit()
    conn.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningDatabaseWarning)
        store = Database(path)
    assert store.counts()["runs"] == 400
    store.close()
    assert path.read_bytes()[68:72] == b"ISTH"  # SQLite's application_id field: isthmus' from now on


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
    _damage_pages(path)  # and a damaged one is still recognised as isthmus' own and set aside
    with pytest.warns(TuningDatabaseWarning, match="moved it to"):
        Database(path).close()


# ---- hostile import files (item 9) -------------------------------------------------------------


# ---- a read-only database: a ConfigMap, an image layer (issue 26, item 3) ------------------------
def _without_root_powers():
    """A preexec_fn under which file permissions hold even when the tests run as root: the child
    loses CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped from its bounding set, so exec keeps
    them dropped). None when not root; skips the test where capabilities cannot be dropped."""
    if os.geteuid() != 0:
        return None

    def drop():
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                os._exit(97)
    probe = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=drop)
    if probe.returncode == 97:
        pytest.skip("running as root without CAP_SETPCAP: cannot make a file read-only for this process")
    return drop


_READER = """
import json, sys, warnings
import numpy as np
sys.path.insert(0, {here!r})
warnings.simplefilter("error")  # a read-only database is used as it is: no warning
import isthmus
from isthmus.errors import DatabaseError
from isthmus.tune import db as dbmod
from test_tune_db import AXPY, F32, FakeDevice, _record
out = {{"where": dbmod.explain(AXPY, FakeDevice(), F32, {{"n": 1000}}), "readonly": dbmod.user().readonly,
        "counts": dbmod.user().counts()}}
try:
    _record(dbmod.user(), FakeDevice(), 1000, {{"WG": 256, "VPT": 1}}, 0.1)
except DatabaseError as exc:
    out["record"] = str(exc)
def inputs(p, dt, rng):
    print("MEASURED")  # (the first thing a tuning run does)
    return (np.zeros(p["n"], dt),)
k = isthmus.tune.declare("fill_ro", "__kernel void fill(__global float* y) {{ y[get_global_id(0)] = 1.0f; }}",
                         entry="fill", tunables={{"WG": ((1, 2), 1)}}, problem=("n",), output=0,
                         grid=lambda p, c: ((p["n"],), (c["WG"],)), inputs=inputs, reference=lambda y: y + 1)
try:
    isthmus.tune(k, problem={{"n": 64}}, budget=1)
except DatabaseError as exc:
    out["tune"] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.parametrize("how", ["file", "folder"])
def test_a_read_only_database_is_read_and_refuses_writes(tmp_path, how):
    folder = tmp_path / "configmap"
    folder.mkdir()
    path = folder / "tuning.sqlite"
    store = Database(path)
    _record(store, FakeDevice(), 1000, {"WG": 128, "VPT": 4}, 2.0)
    store.close()
    exporting = Database(path)
    (tmp_path / "import.json").write_text(json.dumps(export(exporting)))
    exporting.close()  # (left to the garbage collector, its close removed -wal/-shm files mid-test: a flake)
    os.chmod(path, 0o444)
    if how == "folder":
        os.chmod(folder, 0o555)
    before = _snapshot(tmp_path)
    drop = _without_root_powers()
    env = {**os.environ, "ISTHMUS_TUNING_DB": str(path)}
    try:
        r = subprocess.run([sys.executable, "-c", _READER.format(here=os.path.dirname(__file__))], env=env,
                           capture_output=True, text=True, timeout=300, preexec_fn=drop)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.splitlines()[-1])
        assert "MEASURED" not in r.stdout  # refused before anything ran
        assert out["where"] == ["user database, exact", {"VPT": 4, "WG": 128}] and out["readonly"]
        assert out["counts"] == {"runs": 1, "best": 1}
        for verb in ("record", "tune"):
            assert f"{path} is read-only" in out[verb] and "export ISTHMUS_TUNING_DB=" in out[verb], out
        shown = subprocess.run([sys.executable, "-m", "isthmus", "db", "show"], env={**env, "COLUMNS": "200"},
                               capture_output=True, text=True, timeout=120, preexec_fn=drop)
        assert shown.returncode == 0 and "WG=128" in shown.stdout and "read-only" in shown.stdout, shown.stderr
        imported = subprocess.run([sys.executable, "-m", "isthmus", "db", "import", str(tmp_path / "import.json")],
                                  env=env, capture_output=True, text=True, timeout=120, preexec_fn=drop)
        assert imported.returncode == 2 and "is read-only" in imported.stderr, imported.stderr
        assert "Traceback" not in imported.stderr
    finally:
        os.chmod(folder, 0o755)
        os.chmod(path, 0o644)
    after = _snapshot(tmp_path)
    assert after == before, set(after) ^ set(before)  # nothing written beside it, nothing changed
