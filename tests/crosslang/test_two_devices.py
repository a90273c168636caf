"""Two plain Java threads, each driving its own device, through the launcher (one process)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_two_java_threads_two_devices():
    classes = REPO / "target" / "test-classes"
    if not (classes / "io" / "isthmus" / "bench" / "TwoDevices.class").exists():
        pytest.skip("Java test classes not built: run `make jar`")
    env = {**os.environ, "POCL_DEVICES": os.environ.get("POCL_DEVICES", "pthread pthread")}
    proc = subprocess.run([sys.executable, "-m", "isthmus.cli", "java", "-cp", str(classes),
                           "io.isthmus.bench.TwoDevices", "50"], capture_output=True, text=True, timeout=600,
                          env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TWO DEVICES OK" in proc.stdout and proc.stdout.count("rounds correct") == 2
