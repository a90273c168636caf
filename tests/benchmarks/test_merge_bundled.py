"""benchmarks/tools/merge_bundled.py: a run that re-tunes a few problems of a kernel replaces those
and the kernel's entries of an older source, and keeps the kernel's other current problems."""
from __future__ import annotations

import copy
import json

from benchmarks.tools.merge_bundled import merge
from isthmus.tune.db import fingerprint
from isthmus.tune.space import kernel_family

DEVICE = {"backend": "opencl", "driver": "1", "name": "Some GPU", "vendor": "Someone"}


def _entry(rows: int, cols: int, wg: int, source: str | None = None) -> dict:
    src, options = fingerprint(kernel_family("softmax"), "float32")
    return {"bucket": {"cols": cols, "rows": rows}, "default_ms": 1.0, "device": DEVICE, "dtype": "float32",
            "kernel": "softmax", "options": options, "source_hash": source or src, "time_ms": 0.5,
            "params": {"WG": wg, "VPT": 4, "CACHE": 0, "RPG": 1, "SPLIT": 1, "ROWLOOP": 0}}


def test_a_partial_run_replaces_its_problems_and_stale_sources_and_keeps_the_rest(tmp_path):
    path = tmp_path / "bundled.json"
    stale = _entry(16, 16, 64, source="0" * 64)
    other_device = dict(_entry(1024, 1024, 64), device=dict(DEVICE, name="Another GPU"))
    path.write_text(json.dumps({"format": "isthmus-tuning", "schema": 1, "entries": [
        _entry(1024, 1024, 64), _entry(8192, 8192, 128), stale, other_device]}))
    bundle = {"format": "isthmus-tuning", "schema": 1, "entries": [_entry(1024, 1024, 256)]}
    merge(path, copy.deepcopy(bundle))
    got = {(e["device"]["name"], e["bucket"]["rows"], e["params"]["WG"]) for e in json.loads(path.read_text())["entries"]}
    assert got == {("Some GPU", 1024, 256), ("Some GPU", 8192, 128), ("Another GPU", 1024, 64)}


def test_the_cpu_core_counts_of_file_and_run_are_both_kept(tmp_path):
    path = tmp_path / "bundled.json"
    path.write_text(json.dumps({"format": "isthmus-tuning", "schema": 1, "entries": [
        dict(_entry(1024, 1024, 64), device=dict(DEVICE, name="Another CPU"))], "cores": {"Another CPU": 16}}))
    merge(path, {"format": "isthmus-tuning", "schema": 1, "entries": [_entry(1024, 1024, 256)],
                 "cores": {"Some GPU": 2}})
    assert json.loads(path.read_text())["cores"] == {"Another CPU": 16, "Some GPU": 2}
