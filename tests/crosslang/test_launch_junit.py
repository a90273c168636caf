"""Prepared launches, graphs and fused kernels from Java (io.isthmus.LaunchTest), in this process's JVM."""
from __future__ import annotations

from .junit import run_classes


def test_launch_from_java(jvm):
    import isthmus

    before = isthmus.live_buffers()
    summary = run_classes(["io.isthmus.LaunchTest"])
    assert summary.found > 0, "JUnit found no tests in LaunchTest"
    assert summary.failed == 0, "\n".join("\n".join(f.splitlines()[:12]) for f in summary.failures)
    assert isthmus.live_buffers() == before, "Java launch tests leaked buffers"
