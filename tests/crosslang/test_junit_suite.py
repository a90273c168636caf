"""The Java JUnit suite, run inside this process's JVM on the real runtime, one class per test.

The classes are found, not listed (junit.discover); a class says what it needs from this side
with JUnit tags:

- ``tuning-db``: a private, empty tuning database;
- ``fast-thread-switch``: Python switches threads every microsecond, so Java threads closing
  buffers land between the runtime's checks and its enqueues;
- ``unattached``: some of its tests run only in a JVM with no runtime (they abort here);
- ``llama-model``: tiny random Llama checkpoints (conftest.llama_models), their folders as the
  system properties ``isthmus.test.llama.NAME``.
"""
from __future__ import annotations

import sys

import pytest

from .conftest import TEST_CLASSES
from .junit import discover, run_classes, tags

CLASSES = discover(TEST_CLASSES) if TEST_CLASSES.is_dir() else []
KNOWN_TAGS = {"tuning-db", "fast-thread-switch", "unattached", "llama-model"}


@pytest.mark.parametrize("name", CLASSES)
def test_junit_class(jvm, request, name):
    import isthmus

    wanted = tags(name)
    assert wanted <= KNOWN_TAGS, f"{name} has tags {sorted(wanted - KNOWN_TAGS)} that this suite does not provide"
    if "tuning-db" in wanted:
        request.getfixturevalue("tuning_db")
    if "llama-model" in wanted:
        request.getfixturevalue("llama_models")
    switch = sys.getswitchinterval()
    if "fast-thread-switch" in wanted:
        sys.setswitchinterval(1e-6)
    before = isthmus.live_buffers()
    try:
        summary = run_classes([name])
    finally:
        sys.setswitchinterval(switch)
    assert summary.found > 0, f"JUnit found no tests in {name}"
    assert summary.failed == 0, "\n".join("\n".join(f.splitlines()[:12]) for f in summary.failures)
    assert summary.aborted == 0 or "unattached" in wanted, f"{summary.aborted} aborted in {name}"
    assert isthmus.live_buffers() == before, f"the Java tests of {name} leaked buffers"


def test_discovery_finds_test_classes_by_their_annotations(tmp_path):
    """A class with a JUnit test method is found whatever its name or package; helpers and
    nested classes are not."""
    if not CLASSES:
        pytest.skip("Java test classes not built: run `make jar`")
    assert "io.isthmus.OpsTest" in CLASSES and "io.isthmus.Attached" not in CLASSES
    pkg = tmp_path / "a" / "b"
    pkg.mkdir(parents=True)
    (pkg / "Checks.class").write_bytes((TEST_CLASSES / "io" / "isthmus" / "OpsTest.class").read_bytes())
    (pkg / "Helper.class").write_bytes((TEST_CLASSES / "io" / "isthmus" / "Attached.class").read_bytes())
    (pkg / "Checks$1.class").write_bytes((TEST_CLASSES / "io" / "isthmus" / "OpsTest.class").read_bytes())
    assert discover(tmp_path) == ["a.b.Checks"]
