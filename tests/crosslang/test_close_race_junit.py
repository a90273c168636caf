"""Java threads closing buffers while other Java threads launch on them (io.isthmus.CloseRaceTest),
in this process's JVM, with Python switching threads every microsecond so the closes land between
the runtime's checks and its enqueues."""
from __future__ import annotations

import sys

from .junit import run_classes


def test_java_threads_close_while_others_launch(jvm):
    import isthmus

    before = isthmus.live_buffers()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        summary = run_classes(["io.isthmus.CloseRaceTest"])
    finally:
        sys.setswitchinterval(switch)
    assert summary.found > 0, "JUnit found no tests in CloseRaceTest"
    assert summary.failed == 0, "\n".join("\n".join(f.splitlines()[:12]) for f in summary.failures)
    assert isthmus.live_buffers() == before, "the close-race test leaked buffers"
