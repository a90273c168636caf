"""examples/java as a user runs it: the app through the launcher, its JUnit tests through
`mvn test` (surefire's forked JVM hosted by Python through the bin/java of `isthmus jvm-home`)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from isthmus import __version__
from isthmus.java import jvm_home, maven

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "java"
M2_JAR = maven.local_repository() / "io" / "isthmus" / "isthmus" / __version__ / f"isthmus-{__version__}.jar"

pytestmark = pytest.mark.skipif(shutil.which("mvn") is None or not M2_JAR.exists(),
                                reason="needs Maven and io.isthmus:isthmus installed (make jar)")


def _env():
    return dict(os.environ)


def test_example_app_runs_through_the_launcher():
    subprocess.run(["mvn", "-q", "-B", "-ntp", "compile"], cwd=EXAMPLE, check=True, timeout=300)
    r = subprocess.run([sys.executable, "-m", "isthmus.java", "-cp", "target/classes", "example.Scoring"],
                       cwd=EXAMPLE, capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    for planted in (17, 256, 511, 999):
        assert f"(planted item {planted}): item {planted} " in r.stdout, r.stdout
    assert "live device buffers after the job: 0" in r.stdout


def test_example_junit_tests_run_on_the_real_runtime(tmp_path):
    home = jvm_home.create(tmp_path / "jvm")  # bin/java runs `isthmus java` with this interpreter
    r = subprocess.run(["mvn", "-B", "-ntp", f"-Disthmus.jvm.home={home}", "test"], cwd=EXAMPLE, capture_output=True,
                       text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stdout[-4000:]
    assert "Tests run: 2, Failures: 0, Errors: 0, Skipped: 0" in r.stdout
