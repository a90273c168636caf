"""The hosted JVM of the Java benchmarks, with the bench classes (``io.isthmus.bench``) that
``make jar`` compiles into target/test-classes."""
from __future__ import annotations

from pathlib import Path

TEST_CLASSES = Path(__file__).resolve().parents[1] / "target" / "test-classes"


def start_jvm(probe: str = "JavaBench"):
    """Start the JVM (once per process) with the bench classes; returns ``jpype``."""
    import isthmus.java

    if not (TEST_CLASSES / "io" / "isthmus" / "bench" / f"{probe}.class").exists():
        raise SystemExit(f"the Java bench classes are missing ({TEST_CLASSES}): build them first with `make jar`")
    isthmus.java.start(classpath=[str(TEST_CLASSES)])
    import jpype

    return jpype


def java_version(jpype) -> str:
    return str(jpype.JClass("java.lang.System").getProperty("java.version"))
