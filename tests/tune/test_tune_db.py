"""The tuning database: records, best per key, fallback lookup, memo, concurrency, crashes,
damaged files, JSON exchange. Uses a stand-in device (no kernels are run here)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from isthmus.dtypes import lookup as dtype
from isthmus.errors import DatabaseError
from isthmus.ops.registry import FAMILIES
from isthmus.tune import db as dbmod
from isthmus.tune.db import Database, TuningDatabaseWarning, key_for

AXPY, GEMM = FAMILIES["axpy"], FAMILIES["gemm"]
# gemm's tunables besides the tile: the tiled variant, the other variants' parameters at their defaults
_G = {"VARIANT": 0, "KS": 4, "CM": 4, "CN": 2, "CV": 8, "CR": 1, "VLD": 1, "RM": 4, "RN": 2, "RW": 8}
F32 = dtype("float32")


class FakeDevice:
    kind = "gpu"
    max_work_group_size = 1024
    local_mem_size = 49152
    local_mem_optin = compute_capability = None
    native_vector_width_float = 0

    def __init__(self, name="Fake GPU", driver="1.0", id="fake:0"):
        self.name, self.driver, self.id = name, driver, id

    def identity(self):
        return {"backend": "opencl", "vendor": "Fake", "name": self.name, "driver": self.driver, "platform": "p"}


def _record(store, dev, n, params, ms, status="ok", family=AXPY):
    problem = {"n": n} if family is AXPY else n
    store.record(key_for(family, dev, "float32", problem), problem, params, ms, status)


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


def test_lookup_falls_back_exact_nearest_bucket_other_driver_defaults(db):
    dev = FakeDevice(driver="1.0")
    _record(db, dev, 1 << 10, {"WG": 64, "VPT": 1}, 1.0)
    _record(db, dev, 1 << 20, {"WG": 512, "VPT": 8}, 1.0)
    other_driver = FakeDevice(driver="2.0", id="fake:1")
    _record(db, other_driver, 1 << 16, {"WG": 128, "VPT": 2}, 1.0)
    dbmod.forget()
    assert dbmod.explain(AXPY, dev, F32, {"n": 1000}) == ("user database, exact", {"VPT": 1, "WG": 64})
    assert dbmod.explain(AXPY, dev, F32, {"n": 900_000})[1] == {"VPT": 8, "WG": 512}  # nearest bucket
    where, params = dbmod.explain(AXPY, dev, F32, {"n": 5000})
    assert where == "user database, nearest bucket" and params == {"VPT": 1, "WG": 64}
    # A third driver of the same model: another driver's entries, nearest bucket first.
    new_driver = FakeDevice(driver="3.0", id="fake:2")
    assert dbmod.explain(AXPY, new_driver, F32, {"n": 1 << 16}) == ("user database, other driver",
                                                                   {"VPT": 2, "WG": 128})
    other_model = FakeDevice(name="Other GPU", id="fake:3")
    assert dbmod.lookup(AXPY, other_model, F32, {"n": 1000}) is None  # -> the family's defaults


def test_lookup_never_returns_a_config_the_device_cannot_run(db):
    dev = FakeDevice()
    _record(db, dev, 1000, {"WG": 1024, "VPT": 4}, 1.0)
    small = FakeDevice(id="fake:small")
    small.max_work_group_size = 256
    assert dbmod.lookup(AXPY, small, F32, {"n": 1000}) is None


def test_what_ops_resolved_is_remembered_until_the_database_is_forgotten(db):
    """The database is read when an op call shape is first seen (no memo of its own: it would be
    shadowed by the op's); what was resolved holds until forget()."""
    from isthmus.ops.resolve import plan

    dev = FakeDevice()
    _record(db, dev, 4096, {"WG": 128, "VPT": 2}, 1.0)
    dbmod.forget()

    def resolved():
        return plan(AXPY, ("test", dev.id, 4000), lambda: dbmod.lookup(AXPY, dev, F32, {"n": 4000}))
    assert resolved() == {"VPT": 2, "WG": 128}
    _record(db, dev, 4096, {"WG": 256, "VPT": 2}, 0.5)  # not seen until forget(): remembered
    assert resolved() == {"VPT": 2, "WG": 128}
    assert dbmod.lookup(AXPY, dev, F32, {"n": 4000}) == {"VPT": 2, "WG": 256}  # the database itself has it
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(1000):
            resolved()
        runs.append((time.perf_counter() - t0) / 1000)
    assert sorted(runs)[2] < 50e-6  # the benchmark (benchmarks/tune_lookup.py) holds it to 20 us
    dbmod.forget()
    assert resolved() == {"VPT": 2, "WG": 256}


_WRITER = """
import sys
from isthmus.tune.db import Database, key_for
from isthmus.ops.registry import FAMILIES
sys.path.insert(0, {here!r})
from test_tune_db import FakeDevice
db = Database(sys.argv[1])
dev = FakeDevice()
tag, count = int(sys.argv[2]), int(sys.argv[3])
print("ready", flush=True)
for i in range(count):
    wg = (32, 64, 128, 256, 512, 1024)[i % 6]
    db.record(key_for(FAMILIES["axpy"], dev, "float32", {{"n": 1000}}), {{"n": 1000}}, {{"WG": wg, "VPT": 1}},
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


def _entry(**over):
    e = {"kernel": "gemm", "source_hash": "abc", "options": "{}", "dtype": "float32",
         "device": {"backend": "cuda", "vendor": "NVIDIA", "name": "H200", "driver": "570"},
         "bucket": {"m": 512, "n": 512, "k": 512}, "params": {**_G, "TM": 64, "TN": 64, "TK": 16, "WPTM": 4, "WPTN": 4},
         "time_ms": 1.5, "default_ms": 2.0}
    e.update(over)
    return e


def _doc(*entries):
    return {"format": "isthmus-tuning", "schema": 1, "entries": list(entries)}


def test_export_import_round_trip(db, tmp_path):
    dev = FakeDevice()
    _record(db, dev, 1000, {"WG": 128, "VPT": 4}, 2.0)
    _record(db, dev, {"m": 64, "n": 64, "k": 64}, {**_G, "TM": 32, "TN": 32, "TK": 16, "WPTM": 4, "WPTN": 4}, 1.0,
            family=GEMM)
    doc = json.loads(json.dumps(db.export()))
    other = Database(tmp_path / "other.sqlite")
    assert other.import_document(doc) == 2
    assert other.export() == doc


@pytest.mark.parametrize("bad, message", [
    (_entry(kernel="fft"), "entry 1 .*unknown kernel 'fft'"),
    (_entry(params={**_G, "TM": "64", "TN": 64, "TK": 16, "WPTM": 4, "WPTN": 4}), "entry 1 \\(gemm\\).*TM = '64'"),
    (_entry(params={**_G, "TM": 48, "TN": 64, "TK": 16, "WPTM": 4, "WPTN": 4}), "TM = 48 is out of the space"),
    (_entry(params={**_G, "TM": 64, "TN": 64, "TK": 16, "WPTM": 4}), "tunables"),
    (_entry(time_ms=-1), "time_ms"),
    (_entry(time_ms=True), "time_ms"),
    (_entry(dtype="int32"), "no dtype int32"),
    (_entry(bucket={"m": 500, "n": 512, "k": 512}), "power of two"),
    (_entry(bucket={"n": 512}), "bucket"),
    (_entry(device={"backend": "cuda"}), "device"),
    (_entry(extra=1), "unknown fields"),
])
def test_bad_import_is_rejected_naming_the_entry_and_changes_nothing(db, bad, message):
    _record(db, FakeDevice(), 1000, {"WG": 128, "VPT": 4}, 2.0)
    before = db.export()
    with pytest.raises(DatabaseError, match=message):
        db.import_document(_doc(_entry(), bad))
    assert db.export() == before


@pytest.mark.parametrize("doc", [[], {"format": "other", "schema": 1, "entries": []},
                                 {"format": "isthmus-tuning", "schema": 2, "entries": []},
                                 {"format": "isthmus-tuning", "schema": 1, "entries": {}}])
def test_bad_documents_are_rejected(db, doc):
    with pytest.raises(DatabaseError):
        db.import_document(doc)


def test_bundled_configs_are_consulted_after_the_users(db, monkeypatch):
    dev = FakeDevice()
    shipped = Database.memory()
    _record(shipped, dev, 1000, {"WG": 512, "VPT": 8}, 1.0)
    _record(shipped, dev, 1 << 20, {"WG": 256, "VPT": 8}, 1.0)
    monkeypatch.setattr(dbmod, "_bundled", shipped)
    _record(db, dev, 1000, {"WG": 64, "VPT": 2}, 3.0)
    dbmod.forget()
    assert dbmod.explain(AXPY, dev, F32, {"n": 1000}) == ("user database, exact", {"VPT": 2, "WG": 64})
    # The user's nearest bucket still comes before the bundled exact one: the user's database is consulted first.
    assert dbmod.explain(AXPY, dev, F32, {"n": 1 << 20})[0] == "user database, nearest bucket"
    db.clear()
    assert dbmod.explain(AXPY, dev, F32, {"n": 1 << 20}) == ("bundled database, exact", {"VPT": 8, "WG": 256})


def test_shipped_bundled_configs_are_valid(db):
    bundled = dbmod.bundled()
    assert bundled.readonly
    with pytest.raises(DatabaseError, match="read-only"):
        bundled.clear()
    for entry in bundled.export()["entries"]:
        assert entry["kernel"] in FAMILIES


def test_an_unusable_database_location_never_breaks_a_lookup(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(blocker / "sub" / "tuning.sqlite"))
    dbmod.reset()
    try:
        with pytest.warns(TuningDatabaseWarning, match="lookup failed"):
            assert dbmod.lookup(AXPY, FakeDevice(), F32, {"n": 10}) is None
    finally:
        dbmod.reset()


# ---- bad values in a structurally valid database (issue 15, item 6) ---------------------------
def _insert_best(path, keyrow_over: dict, params: str, time_ms=1.0):
    base = dict(zip(("kernel", "source_hash", "options", "backend", "vendor", "device", "driver", "dtype", "bucket"),
                    key_for(AXPY, FakeDevice(), "float32", {"n": 1024}).row()))
    base.update(keyrow_over)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO best (kernel, source_hash, options, backend, vendor, device, driver, dtype, bucket, "
                 "params, time_ms, default_ms, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 tuple(base.values()) + (params, time_ms, None, 0.0))
    conn.commit()
    conn.close()


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


def test_launch_through_a_database_of_bad_rows_uses_the_defaults(dev, rng, tuning_db):
    import isthmus

    n = 1000
    key = key_for(AXPY, dev, "float32", {"n": n})
    store = dbmod.user()
    _record(store, FakeDevice(), 1 << 16, {"WG": 128, "VPT": 2}, 1.0)  # another device: irrelevant here
    conn = sqlite3.connect(store.path)
    for bucket, params in (("[1024]", "{not json"), ("[0]", '{"WG": 64, "VPT": 1}'), ("7", '{"WG": 64, "VPT": 1}')):
        conn.execute("INSERT INTO best VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     key.row()[:-1] + (bucket, params, 1.0, None, 0.0))
    conn.commit()
    conn.close()
    dbmod.forget()
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    by = dev.asarray(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TuningDatabaseWarning)
        isthmus.ops.axpy(2.0, dev.asarray(x), by)
    np.testing.assert_allclose(by.to_numpy(), 2 * x + y, rtol=1e-5, atol=1e-5)


def test_db_show_prints_what_it_can(db, capsys):
    from isthmus.cli import db as dbcli

    dev = FakeDevice()
    _record(db, dev, 1 << 10, {"WG": 128, "VPT": 2}, 1.0)
    _record(db, dev, 1 << 12, {"WG": 256, "VPT": 4}, 2.0)
    _insert_best(db.path, {"bucket": "[64]"}, '{"WG": 64, "VPT": 1}', time_ms="fast")  # non-numeric time
    _insert_best(db.path, {"bucket": "[32]"}, '{"WG": 64, "VPT"')
    conn = sqlite3.connect(db.path)
    conn.execute("ALTER TABLE best DROP COLUMN default_ms")  # a tool dropped a column
    conn.commit()
    conn.close()
    dbmod.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TuningDatabaseWarning)
        assert dbcli.main(["show"]) == 0
        out = capsys.readouterr().out
        assert "WG=128" in out and "WG=256" in out
        assert dbcli.main(["show", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(e["params"]["WG"] for e in doc["entries"]) == [128, 256]


# ---- paths with URI syntax (item 7) -----------------------------------------------------------
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
def _write_doc(path, text: str, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return str(path)


@pytest.mark.parametrize("case", ["huge_float", "huge_exponent_int", "many_digits", "deep", "not_utf8", "utf16",
                                  "schema_true", "schema_float", "long_source_hash", "long_device", "nan",
                                  "huge_bucket", "too_big"])
def test_import_of_hostile_files_is_a_typed_error(db, tmp_path, capsys, case):
    from isthmus.cli import db as dbcli
    from isthmus.tune.exchange import MAX_DOCUMENT_BYTES

    good = json.dumps(_doc(_entry()))
    f = tmp_path / "doc.json"
    text = {
        "huge_float": good.replace('"time_ms": 1.5', '"time_ms": 1e999'),
        "huge_exponent_int": good.replace('"time_ms": 1.5', '"time_ms": ' + "9" * 400),
        "many_digits": good.replace('"time_ms": 1.5', '"time_ms": ' + "7" * 5000),
        "deep": "[" * 200_000 + "]" * 200_000,
        "schema_true": good.replace('"schema": 1', '"schema": true'),
        "schema_float": good.replace('"schema": 1', '"schema": 1.0'),
        "long_source_hash": good.replace('"abc"', '"' + "a" * 5_000_000 + '"'),
        "long_device": good.replace('"H200"', '"' + "H" * 100_000 + '"'),
        "nan": good.replace('"time_ms": 1.5', '"time_ms": NaN'),
        "huge_bucket": good.replace('"m": 512', '"m": ' + str(2 ** 200)),
    }.get(case)
    if case == "not_utf8":
        f.write_bytes(good.encode().replace(b"H200", b"H\xff\xfe200"))
    elif case == "utf16":
        _write_doc(f, good, "utf-16")
    elif case == "too_big":
        with open(f, "wb") as out:
            out.truncate(MAX_DOCUMENT_BYTES + 10)
    else:
        assert text != good
        _write_doc(f, text)
    before = db.export()
    assert dbcli.main(["import", str(f)]) == 2
    err = capsys.readouterr().err
    assert "DatabaseError" in err and "Traceback" not in err
    assert db.export() == before


def test_import_document_rejects_non_int_schema_and_unconvertible_numbers(db):
    for doc in ({**_doc(_entry()), "schema": True}, {**_doc(_entry()), "schema": 1.0},
                _doc(_entry(time_ms=10 ** 400)), _doc(_entry(default_ms=10 ** 5000)),
                _doc(_entry(source_hash="s" * 200_000))):
        with pytest.raises(DatabaseError):
            db.import_document(doc)
    assert db.import_document(_doc(_entry())) == 1


def test_import_takes_configs_of_cpu_only_variants(db):
    """A config of a variant only CPUs may run (gemm's VARIANT 2, `is_cpu` in its restrictions) is
    valid in a document: the device it was tuned on is not known here, and the lookup re-checks it
    against the device at hand."""
    cpu = _entry(device={"backend": "opencl", "vendor": "GenuineIntel", "name": "pthread-x", "driver": "3.1"},
                 params={**_G, "TM": 128, "TN": 128, "TK": 16, "WPTM": 8, "WPTN": 8,
                         "VARIANT": 2, "CM": 2, "CN": 8, "CV": 16, "CR": 8})
    assert db.import_document(_doc(cpu)) == 1
