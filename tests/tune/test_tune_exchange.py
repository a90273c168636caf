"""tune/exchange.py: tuning documents exported and imported (round trip, bad entries and documents
refused naming what is wrong and changing nothing, hostile files as typed errors), and the shipped
bundled documents valid. Uses the stand-in device of test_tune_db."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from isthmus.errors import DatabaseError
from isthmus.tune import db as dbmod
from isthmus.ops.registry import OPS
from isthmus.tune.db import Database
from isthmus.tune.exchange import export, import_document
from test_tune_db import GEMM, FakeDevice, _G, _record


SOURCE, OPTIONS = dbmod.fingerprint(GEMM, "float32")  # the gemm this isthmus has


def _entry(**over):
    e = {"kernel": "gemm", "source_hash": SOURCE, "options": OPTIONS, "dtype": "float32",
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
    doc = json.loads(json.dumps(export(db)))
    other = Database(tmp_path / "other.sqlite")
    assert import_document(other, doc) == 2
    assert export(other) == doc


@pytest.mark.parametrize("bad, message", [
    # a kernel this process has not declared is stored, but what can be checked without it is
    (_entry(kernel="fft", bucket=[512, 500]), "entry 1 \\(fft\\).*power of two"),
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
    before = export(db)
    with pytest.raises(DatabaseError, match=message):
        import_document(db, _doc(_entry(), bad))
    assert export(db) == before


def _softmax(**params):
    softmax = OPS["softmax"]
    source, options = dbmod.fingerprint(softmax, "float32")
    base = {"WG": 256, "VPT": 4, "CACHE": 0, "RPG": 1, "SPLIT": 1, "ROWLOOP": 0}
    return _entry(kernel="softmax", source_hash=source, options=options, bucket={"rows": 1024, "cols": 2048},
                  params={**base, **params})


@pytest.mark.parametrize("params, failing", [
    ({"WG": 16}, ["WG >= 32 or ROWLOOP == 1"]),
    ({"CACHE": 2, "VPT": 4}, ["CACHE <= 1 or VPT == 8"]),
])
def test_a_restriction_error_names_only_the_clauses_that_fail(db, params, failing):
    """Issue 26, item 11: softmax has 13 restriction clauses; the message lists the failing ones."""
    softmax = OPS["softmax"]
    assert len(softmax.restrictions) > 10
    with pytest.raises(DatabaseError) as caught:
        import_document(db, _doc(_softmax(**params)))
    text = str(caught.value)
    assert "entry 0 (softmax)" in text and "at bucket rows=1024 cols=2048" in text
    listed = text.split(" fail: ", 1)[1].split("; ")
    assert listed == failing, text


def test_a_tunable_set_outside_its_variant_is_named(db):
    entry = _entry()
    entry["params"]["KS"] = 8  # split-K's parameter on the tiled variant
    with pytest.raises(DatabaseError, match="KS = 8 is set, but KS applies only where VARIANT is one of 1"):
        import_document(db, _doc(entry))


def test_an_edited_source_hash_never_makes_a_second_best(db):
    """Issue 26, item 11: an entry for another version of a kernel's source (an older isthmus, or
    an edited file) is left out of an import: stored, it would be a second best for the same key."""
    current = _entry()
    edited = _entry(source_hash="0" * 64, time_ms=0.5)
    other_options = _entry(options=OPTIONS.replace("{", '{"x":1,', 1), time_ms=0.4)
    assert import_document(db, _doc(current, edited, other_options)) == 1
    rows = db.best()
    assert len(rows) == 1 and rows[0]["source_hash"] == SOURCE and rows[0]["time_ms"] == 1.5
    assert import_document(db, _doc(edited)) == 0 and len(db.best()) == 1


@pytest.mark.parametrize("doc", [[], {"format": "other", "schema": 1, "entries": []},
                                 {"format": "isthmus-tuning", "schema": 2, "entries": []},
                                 {"format": "isthmus-tuning", "schema": 1, "entries": {}}])
def test_bad_documents_are_rejected(db, doc):
    with pytest.raises(DatabaseError):
        import_document(db, doc)


def test_shipped_bundled_configs_are_valid(db):
    bundled = dbmod.bundled()
    assert bundled.readonly
    with pytest.raises(DatabaseError, match="read-only"):
        bundled.clear()
    for entry in export(bundled)["entries"]:
        assert entry["kernel"] in OPS


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
        "long_source_hash": good.replace(SOURCE, "a" * 5_000_000),
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
    before = export(db)
    assert dbcli.main(["import", str(f)]) == 2
    err = capsys.readouterr().err
    assert "DatabaseError" in err and "Traceback" not in err
    assert export(db) == before


def test_deep_nesting_is_refused_before_the_parser_where_its_recursion_is_unbounded():
    """200,000 nested brackets crashed a pytest-xdist worker on Python 3.12.3 (the parser's C recursion
    overflowed the stack instead of raising RecursionError). Emulated here with a recursion limit the
    stack cannot hold: the document is refused by its depth, before json sees it."""
    code = ("import sys; sys.setrecursionlimit(10 ** 8)\n"
            "from isthmus.errors import DatabaseError\n"
            "from isthmus.tune.exchange import load_document\n"
            "for text in ('[' * 200_000 + ']' * 200_000, '{\"a\":' * 100_000 + '1' + '}' * 100_000):\n"
            "    try:\n"
            "        load_document(text.encode())\n"
            "    except DatabaseError as exc:\n"
            "        print(exc)\n"
            "from isthmus import jsonsafe\n"  # what the safetensors header and the database rows go through
            "try:\n"
            "    jsonsafe.loads('[' * 200_000)\n"
            "except ValueError as exc:\n"
            "    print(exc)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.count("levels deep is not a tuning export") == 2, r.stdout
    assert "JSON nested 200000 levels deep (at most 64 are read)" in r.stdout


def test_import_document_rejects_non_int_schema_and_unconvertible_numbers(db):
    for doc in ({**_doc(_entry()), "schema": True}, {**_doc(_entry()), "schema": 1.0},
                _doc(_entry(time_ms=10 ** 400)), _doc(_entry(default_ms=10 ** 5000)),
                _doc(_entry(source_hash="s" * 200_000))):
        with pytest.raises(DatabaseError):
            import_document(db, doc)
    assert import_document(db, _doc(_entry())) == 1


def test_import_takes_configs_of_cpu_only_variants(db):
    """A config of a variant only CPUs may run (gemm's VARIANT 2, `is_cpu` in its restrictions) is
    valid in a document: the device it was tuned on is not known here, and the lookup re-checks it
    against the device at hand."""
    cpu = _entry(device={"backend": "opencl", "vendor": "GenuineIntel", "name": "pthread-x", "driver": "3.1"},
                 params={**_G, "TM": 128, "TN": 128, "TK": 16, "WPTM": 8, "WPTN": 8,
                         "VARIANT": 2, "CM": 2, "CN": 8, "CV": 16, "CR": 8})
    assert import_document(db, _doc(cpu)) == 1
