"""tune/db.py: the process's user and bundled databases: the fallback lookup, what ops resolved
remembered until the database is forgotten, bundled configs after the user's, an unusable location,
launches through bad rows, `db show`. The stand-in device and helpers here serve test_tune_storage
and test_tune_exchange too (no kernels are run with it)."""
from __future__ import annotations

import json
import sqlite3
import time
import warnings

import numpy as np
import pytest

from isthmus.dtypes import lookup as dtype
from isthmus.ops.registry import OPS
from isthmus.tune import db as dbmod
from isthmus.tune.db import Database, TuningDatabaseWarning, key_for

AXPY, GEMM = OPS["axpy"], OPS["gemm"]
# gemm's tunables besides the tile: the tiled variant, the other variants' parameters at their defaults
_G = {"VARIANT": 0, "KS": 4, "CM": 4, "CN": 2, "CV": 8, "CR": 1, "VLD": 1, "RM": 4, "RN": 2, "RW": 8}
F32 = dtype("float32")


class FakeDevice:
    kind = "gpu"
    max_work_group_size = 1024
    local_mem_size = 49152
    local_mem_optin = compute_capability = None
    wgmma = False
    native_vector_width_float = 0

    def __init__(self, name="Fake GPU", driver="1.0", id="fake:0"):
        self.name, self.driver, self.id = name, driver, id

    def identity(self):
        return {"backend": "opencl", "vendor": "Fake", "name": self.name, "driver": self.driver, "platform": "p"}


def _record(store, dev, n, params, ms, status="ok", family=AXPY):
    problem = {"n": n} if family is AXPY else n
    store.record(key_for(family, dev, "float32", problem), problem, params, ms, status)


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
