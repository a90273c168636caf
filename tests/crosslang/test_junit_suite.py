"""The Java JUnit suite, run inside this process's JVM on the real runtime, one class per test."""
from __future__ import annotations

import pytest

from .junit import run_classes

CLASSES = ["ValuesTest", "DeviceBufferTest", "KernelTest", "OpsTest", "HostMemoryTest", "LifetimeTest", "ThreadsTest",
           "LaunchLimitsTest", "BFloat16Test"]


@pytest.mark.parametrize("name", CLASSES)
def test_junit_class(jvm, name):
    import isthmus

    before = isthmus.live_buffers()
    summary = run_classes([f"io.isthmus.{name}"])
    assert summary.found > 0, f"JUnit found no tests in {name}"
    assert summary.failed == 0, "\n".join("\n".join(f.splitlines()[:6]) for f in summary.failures)
    assert summary.aborted == 0 or name == "ValuesTest", f"{summary.aborted} aborted in {name}"  # unattached-only test
    assert isthmus.live_buffers() == before, "Java tests leaked buffers"
