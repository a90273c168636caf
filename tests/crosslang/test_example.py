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


SERVE_TEST = """package example;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ServeTest {
    @Test
    void loopsUntilStopped() {
        Path dir = Path.of(System.getProperty("marker.dir"));
        Device dev = Isthmus.get().device();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3}); DeviceBuffer s = Ops.sum(x)) {
                Files.writeString(dir.resolve("hook"), "sum=" + s.toFloatArray()[0]);
            } catch (java.io.IOException e) {
                throw new RuntimeException(e);
            }
        }));
        for (int i = 0; i < 2; i++) {
            new Thread(() -> loop(dev, null), "worker-" + i).start();
        }
        loop(dev, dir);
    }

    private static void loop(Device dev, Path dir) {
        for (long n = 0; ; n++) {
            try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3, n}); DeviceBuffer s = Ops.sum(x)) {
                s.toFloatArray();
            }
            if (n == 20 && dir != null) {
                try {
                    Files.writeString(dir.resolve("pid"), Long.toString(ProcessHandle.current().pid()));
                } catch (java.io.IOException e) {
                    throw new RuntimeException(e);
                }
            }
        }
    }
}
"""


def test_sigterm_to_the_test_jvm_of_mvn_test(tmp_path):
    """`mvn test` through the jvm-home java: SIGTERM to the forked test JVM (as a CI runner or
    Ctrl-C does) runs the test's shutdown hook on the runtime and exits 143, with no hs_err file."""
    import signal
    import time

    project = tmp_path / "project"
    (project / "src" / "test" / "java" / "example").mkdir(parents=True)
    (project / "pom.xml").write_text((EXAMPLE / "pom.xml").read_text())
    (project / "src" / "test" / "java" / "example" / "ServeTest.java").write_text(SERVE_TEST)
    markers = tmp_path / "markers"
    markers.mkdir()
    # the interpreter bin/java runs, wrapped to record the forked JVM's exit status
    wrapper = tmp_path / "py"
    wrapper.write_text(f'#!/bin/sh\n"{sys.executable}" "$@"\nrc=$?\necho $rc > "{markers}/status"\nexit $rc\n')
    wrapper.chmod(0o755)
    home = jvm_home.create(tmp_path / "jvm", python=str(wrapper))
    mvn = subprocess.Popen(["mvn", "-B", "-ntp", "-q", f"-Disthmus.jvm.home={home}",
                            f"-DargLine=-Dmarker.dir={markers}", "test"], cwd=project, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (markers / "pid").exists():
            assert mvn.poll() is None and time.monotonic() < deadline, mvn.communicate(timeout=60)[0][-3000:]
            time.sleep(0.5)
        time.sleep(0.5)
        os.kill(int((markers / "pid").read_text()), signal.SIGTERM)
        while not (markers / "status").exists():
            assert time.monotonic() < deadline, "the test JVM did not end"
            time.sleep(0.2)
        time.sleep(0.2)  # the write of the status
        assert (markers / "status").read_text().strip() == "143"
        assert (markers / "hook").read_text() == "sum=6.0"
        assert not list(project.rglob("hs_err_pid*.log")) and not list(project.rglob("core*"))
    finally:
        if mvn.poll() is None:
            os.killpg(mvn.pid, signal.SIGKILL)
        mvn.wait(timeout=60)
