"""Run JUnit 5 test classes inside the hosted JVM through the JUnit Platform launcher API, and
find them: every compiled class under target/test-classes that declares a JUnit test method.

DESIGN (measured): a JUnit package scan finds no tests once JPype has opened the same jar, so
the classes are found here, from the class files, and selected one by one. A class file names
the annotation types its methods carry in its constant pool, so finding them needs no JVM (the
classes are parametrized at collection time, before the JVM starts).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Descriptors of the annotations that make a JUnit Jupiter test method.
_TEST_ANNOTATIONS = (b"Lorg/junit/jupiter/api/Test;", b"Lorg/junit/jupiter/params/ParameterizedTest;",
                     b"Lorg/junit/jupiter/api/RepeatedTest;", b"Lorg/junit/jupiter/api/TestFactory;",
                     b"Lorg/junit/jupiter/api/TestTemplate;")


def discover(classes_dir: Path) -> list[str]:
    """The binary names of the top-level test classes under ``classes_dir``, sorted."""
    found = []
    for path in sorted(classes_dir.rglob("*.class")):
        if "$" in path.name:  # nested and anonymous classes run with their top-level class
            continue
        data = path.read_bytes()
        if any(a in data for a in _TEST_ANNOTATIONS):
            found.append(".".join(path.relative_to(classes_dir).with_suffix("").parts))
    return found


def tags(class_name: str) -> set[str]:
    """The class's JUnit ``@Tag`` values: what it needs from the Python side (see test_junit_suite)."""
    import jpype

    tag = jpype.JClass("org.junit.jupiter.api.Tag")
    return {str(t.value()) for t in jpype.JClass(class_name).class_.getAnnotationsByType(tag)}


@dataclass
class Summary:
    found: int
    succeeded: int
    failed: int
    skipped: int
    aborted: int
    failures: list[str] = field(default_factory=list)
    output: str = ""


def run_classes(class_names: list[str]) -> Summary:
    import jpype

    ds = jpype.JClass("org.junit.platform.engine.discovery.DiscoverySelectors")
    builder = jpype.JClass("org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder")
    factory = jpype.JClass("org.junit.platform.launcher.core.LauncherFactory")
    listener_cls = jpype.JClass("org.junit.platform.launcher.listeners.SummaryGeneratingListener")
    selectors = jpype.JArray(jpype.JClass("org.junit.platform.engine.DiscoverySelector"))(
        [ds.selectClass(jpype.JClass(n)) for n in class_names])
    request = builder.request().selectors(selectors).build()
    listener = listener_cls()
    launcher = factory.create()
    launcher.execute(request, jpype.JArray(jpype.JClass("org.junit.platform.launcher.TestExecutionListener"))([listener]))
    s = listener.getSummary()
    failures = []
    for f in s.getFailures():
        sw = jpype.JClass("java.io.StringWriter")()
        f.getException().printStackTrace(jpype.JClass("java.io.PrintWriter")(sw))
        failures.append(f"{f.getTestIdentifier().getDisplayName()}: {sw}")
    return Summary(int(s.getTestsFoundCount()), int(s.getTestsSucceededCount()), int(s.getTestsFailedCount()),
                   int(s.getTestsSkippedCount()), int(s.getTestsAbortedCount()), failures)
