"""Tuning once per device model, installed in every actor; other models keep the shipped configs."""
from __future__ import annotations

import json

import numpy as np
import pytest

import isthmus
import isthmus.ray

PROBLEM = {"n": 5000}


def _entry_for(doc, kernel):
    found = [e for e in doc["entries"] if e["kernel"] == kernel]
    assert len(found) == 1, doc
    return found[0]


def test_tuned_once_per_model_and_installed_everywhere(pool, tmp_path):
    import ray

    report = pool.tune("axpy", PROBLEM, budget=3, seed=1, path=tmp_path / "shared" / "tuning.json")
    # PoCL's two devices are one model: one actor tuned, both installed
    assert len(report.models) == 1 and report.models[0][0]["backend"] == "opencl"
    assert list(report.imported) == [len(report.document["entries"])] * 2
    entry = _entry_for(report.document, "axpy")
    assert json.loads((tmp_path / "shared" / "tuning.json").read_text()) == report.document
    for where, params in ray.get([h.explain.remote("axpy", PROBLEM) for h in pool.handles]):
        assert where.startswith("user database") and params == entry["params"]
    # and launches use it: the same results as before
    x = np.arange(5000, dtype=np.float32)
    out = pool.map(lambda dev, bufs: (isthmus.ops.axpy(3.0, bufs[0], bufs[1]), bufs[1])[1], [(x, x.copy())] * 3)
    for y in out:
        assert np.array_equal(y, 4 * x)


def _transpose_doc(device: dict) -> dict:
    from isthmus.tune.db import FORMAT, SCHEMA, fingerprint
    from isthmus.tune.space import kernel_family

    fam = kernel_family("transpose")
    source, options = fingerprint(fam, "float32")
    entry = {"kernel": "transpose", "source_hash": source, "options": options, "dtype": "float32",
             "device": device, "bucket": {"rows": 64, "cols": 64},
             "params": {t.name: t.default for t in fam.tunables}, "time_ms": 1.0, "default_ms": 2.0}
    return {"format": FORMAT, "schema": SCHEMA, "entries": [entry]}


def test_configs_of_another_model_are_not_used(pool):
    import ray

    ours = {k: pool.actors()[0]["identity"][k] for k in ("backend", "vendor", "name", "driver")}
    other = {**ours, "vendor": "Another Vendor", "name": "Another GPU"}
    assert pool.install_tuning(_transpose_doc(other)) == [1, 1]
    for found in ray.get([h.explain.remote("transpose", {"rows": 64, "cols": 64}) for h in pool.handles]):
        assert found is None or not found[0].startswith("user database"), found  # shipped configs or defaults
    pool.install_tuning(_transpose_doc(ours))  # the control: our model's entry is used
    for where, _ in ray.get([h.explain.remote("transpose", {"rows": 64, "cols": 64}) for h in pool.handles]):
        assert where.startswith("user database")


def test_bad_tuning_documents_are_refused_in_the_driver(pool):
    with pytest.raises(isthmus.DatabaseError, match="format"):
        pool.install_tuning({"format": "something else", "schema": 1, "entries": []})
    with pytest.raises(isthmus.InvalidArgumentError, match="unknown size .rows.; axpy.s sizes are n"):
        pool.tune("axpy", {"rows": 3}, budget=2)
