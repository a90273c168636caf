"""Run JUnit 5 test classes inside the hosted JVM through the JUnit Platform launcher API."""
from __future__ import annotations

from dataclasses import dataclass, field


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
