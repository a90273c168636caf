"""One hosted JVM for the whole session, with the io.isthmus classes, the Java test classes
and JUnit on its classpath (built by `make jar`: target/test-classes, target/test-classpath.txt).

DESIGN (measured): run with -p no:faulthandler (pyproject sets it), select JUnit test classes
explicitly (a package scan finds nothing once JPype has opened the jar), shut the JVM down
explicitly at exit (isthmus.java registers that).
"""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEST_CLASSES = REPO / "target" / "test-classes"
TEST_CLASSPATH = REPO / "target" / "test-classpath.txt"


def _test_classpath() -> list[str]:
    if not (TEST_CLASSES / "io" / "isthmus" / "CrossLang.class").exists() or not TEST_CLASSPATH.exists():
        pytest.skip("Java test classes not built: run `make jar` (mvn install) first", allow_module_level=True)
    return [str(TEST_CLASSES), *TEST_CLASSPATH.read_text().strip().split(":")]


@pytest.fixture(scope="session")
def jvm():
    pytest.importorskip("jpype")
    import isthmus.java

    isthmus.java.start(classpath=_test_classpath())
    import jpype

    return jpype


@pytest.fixture(scope="session")
def J(jvm):
    """Java classes by simple name: J.CrossLang, J.Isthmus, ..."""
    class Classes:
        def __getattr__(self, name):
            pkg = "java.lang." if name in ("IllegalStateException", "String", "System") else "io.isthmus."
            return jvm.JClass(pkg + name)

    return Classes()
