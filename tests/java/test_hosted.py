"""A JVM started by its own host (plain `java`, JDK 22+) boots the runtime in process on the first
Isthmus.get() (issue 31; io.isthmus.InProcess, isthmus.java.hosted): real JVM subprocesses with the
newest JDK found, the runtime from this interpreter (ISTHMUS_PYTHON), results checked against NumPy
in the tests; exit codes and shutdown hooks as `java` gives them; the typed errors for each way it
cannot boot; what `isthmus maven-install` installs for it."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from isthmus.errors import BackendUnavailableError
from isthmus.java import hosted, jvm, maven

from _hosted_support import isthmus_jar, java_homes, javac

pytestmark = pytest.mark.xdist_group("jvm")

HOMES = java_homes()
NEW = next((h for v, h in HOMES if v >= 22), None)
OLD = next((h for v, h in HOMES if v < 22), None)
needs_new = pytest.mark.skipif(NEW is None, reason="needs a Java 22+ (the Foreign Function & Memory API) that can compile (javac or jdk.compiler)")

APP = r"""
import io.isthmus.*;
import java.util.*;
import java.util.concurrent.*;

public class App {
    static float[] read(String s) {
        String[] p = s.split(",");
        float[] out = new float[p.length];
        for (int i = 0; i < p.length; i++) out[i] = Float.parseFloat(p[i]);
        return out;
    }

    public static void main(String[] args) throws Exception {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("hook ran")));
        System.out.println("pid " + ProcessHandle.current().pid());
        String mode = args[0];
        if (mode.equals("race")) {  // many threads ask at once: one boot, one runtime
            ExecutorService pool = Executors.newFixedThreadPool(6);
            try {
                List<Future<Isthmus>> got = new ArrayList<>();
                for (int i = 0; i < 6; i++) got.add(pool.submit(Isthmus::get));
                Set<Isthmus> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
                Set<String> errors = new TreeSet<>();
                for (Future<Isthmus> f : got) {
                    try {
                        distinct.add(f.get(240, TimeUnit.SECONDS));
                    } catch (ExecutionException e) {
                        errors.add(e.getCause().getClass().getSimpleName());
                    }
                }
                System.out.println("runtimes " + distinct.size() + " errors " + errors);
            } finally {
                pool.shutdownNow();
            }
            return;
        }
        float[] x = read(args[1]);
        Device dev = Isthmus.get().device();
        try (DeviceBuffer b = dev.fromArray(x); DeviceBuffer s = Ops.sum(b)) {
            System.out.println("sum main " + s.toFloatArray()[0]);
        }
        Thread t = new Thread(() -> {  // a plain Java thread
            try (DeviceBuffer b = Isthmus.get().device().fromArray(x, 1, x.length); DeviceBuffer s = Ops.softmax(b)) {
                float[] y = s.toFloatArray();
                StringBuilder sb = new StringBuilder("softmax thread");
                for (float v : y) sb.append(' ').append(v);
                System.out.println(sb);
            }
        });
        t.start();
        t.join();
        ExecutorService ex = Isthmus.get().executor(2);  // the runtime's executor threads
        float got = ex.submit(() -> {
            try (DeviceBuffer b = dev.fromArray(x); DeviceBuffer s = Ops.sum(b)) { return s.toFloatArray()[0]; }
        }).get();
        ex.shutdown();
        System.out.println("sum executor " + got);
        System.out.println("live " + Isthmus.get().liveBuffers());
        switch (mode) {
            case "exit": System.exit(7); break;
            case "throw": throw new IllegalStateException("thrown from main");
            case "busy":  // until a signal: a loop that allocates, sums and closes
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try (DeviceBuffer b = dev.fromArray(x); DeviceBuffer s = Ops.sum(b)) {
                        System.out.println("hook sum " + s.toFloatArray()[0]);
                    } catch (RuntimeException e) {
                        System.out.println("hook refused " + e.getClass().getSimpleName());
                    }
                }));
                System.out.println("busy");
                while (true) {
                    try (DeviceBuffer b = dev.fromArray(x); DeviceBuffer s = Ops.sum(b)) { s.toFloatArray(); }
                }
            default: break;
        }
    }
}
"""

PROBE = r"""
public class Probe {
    public static void main(String[] a) {
        try {
            io.isthmus.Isthmus.get();
            System.out.println("ATTACHED");
        } catch (io.isthmus.NotAttachedException e) {
            System.out.println("NotAttachedException: " + e.getMessage());
        }
    }
}
"""

# Python's exit handlers: a sitecustomize (found through PYTHONPATH by the embedded interpreter's own
# start) registers one that leaves a file named by the process id
SITECUSTOMIZE = """import atexit, os
_d = os.environ.get("ISTHMUS_TEST_ATEXIT_DIR")
if _d:
    atexit.register(lambda: open(os.path.join(_d, "atexit-%d" % os.getpid()), "w").write("ran"))
"""


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    if NEW is None:
        pytest.skip("needs a Java 22+ (the Foreign Function & Memory API) that can compile (javac or jdk.compiler)")
    jar = isthmus_jar()
    if jar is None:
        pytest.skip("needs the isthmus jar (make jar, or ISTHMUS_CLASSPATH naming it)")
    out = tmp_path_factory.mktemp("hosted-apps")
    for name, text in (("App", APP), ("Probe", PROBE)):
        (out / f"{name}.java").write_text(text)
    # --release 17: the application classes run on every JDK, as the artifact does
    subprocess.run([*javac(NEW), "--release", "17", "-cp", str(jar), "-d", str(out / "classes"),
                    str(out / "App.java"), str(out / "Probe.java")], check=True, capture_output=True, timeout=300)
    (out / "site").mkdir()
    (out / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return {"jar": jar, "classes": out / "classes", "site": out / "site", "dir": out}


def _env(apps, tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ISTHMUS_PYTHON", "PYTHONHOME", "JAVA_TOOL_OPTIONS")}
    # the sitecustomize first, then whatever finds isthmus here (the GPU machine runs the source tree: PYTHONPATH)
    path = os.pathsep.join(p for p in (str(apps["site"]), os.environ.get("PYTHONPATH", "")) if p)
    env.update(ISTHMUS_PYTHON=sys.executable, PYTHONPATH=path, ISTHMUS_TEST_ATEXIT_DIR=str(tmp_path))
    env.update(extra)
    return env


def _cp(apps, *, jpype=True):
    entries = [str(apps["jar"]), str(apps["classes"])]
    if jpype:
        entries.append(str(hosted.jpype_jar()))
    return os.pathsep.join(entries)


def _java(apps, tmp_path, args, *, home=None, jpype=True, opts=(), env=None, timeout=300):
    cmd = [str((home or NEW) / "bin" / "java"), "--enable-native-access=ALL-UNNAMED", *opts, "-cp",
           _cp(apps, jpype=jpype), *args]
    if home is not None and home != NEW:
        # an older JDK runs as its users start it, without the option (17 accepts it; only 22+ needs it here)
        cmd.remove("--enable-native-access=ALL-UNNAMED")
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env=env or _env(apps, tmp_path))


def _csv(x: np.ndarray) -> str:
    return ",".join(repr(float(v)) for v in x)


def _floats(line: str) -> np.ndarray:
    return np.array([float(v) for v in line.split()[2:]])


def _pid(out: str) -> int:
    return int(re.search(r"^pid (\d+)$", out, re.M).group(1))


def _check_results(out: str, x: np.ndarray) -> None:
    x64 = x.astype(np.float64)
    sums = [float(m) for m in re.findall(r"^sum (?:main|executor) (\S+)$", out, re.M)]
    # float32 sums: the error scales with sum(|x|), not with a sum that may cancel to near zero
    assert len(sums) == 2 and np.allclose(sums, x64.sum(), rtol=1e-5, atol=1e-6 * np.abs(x64).sum()), out
    soft = _floats(next(line for line in out.splitlines() if line.startswith("softmax thread")))
    ref = np.exp(x64 - x64.max())
    np.testing.assert_allclose(soft, ref / ref.sum(), rtol=1e-5, atol=1e-7)
    assert re.search(r"^live 0$", out, re.M), out


def _no_crash(tmp_path, r) -> None:
    assert not list(tmp_path.glob("hs_err_pid*.log")), r.stdout[-3000:]
    assert "SIGSEGV" not in r.stderr and "fatal error" not in r.stderr.lower(), r.stderr[-3000:]


@needs_new
@pytest.mark.parametrize("mode, rc", [("return", 0), ("exit", 7), ("throw", 1)])
def test_plain_java_boots_the_runtime_and_exits_as_java_does(apps, tmp_path, mode, rc):
    rng = np.random.default_rng()
    x = rng.standard_normal(37).astype(np.float32)
    r = _java(apps, tmp_path, ["App", mode, _csv(x)])
    assert r.returncode == rc, r.stdout[-3000:] + r.stderr[-3000:]
    _check_results(r.stdout, x)
    assert r.stdout.rstrip().endswith("hook ran")  # the application's shutdown hook, after everything
    assert (tmp_path / f"atexit-{_pid(r.stdout)}").read_text() == "ran"  # Python's exit handlers ran
    if mode == "throw":
        assert 'Exception in thread "main" java.lang.IllegalStateException: thrown from main' in r.stderr
    assert "WARNING" not in r.stderr  # --enable-native-access given: the JDK has nothing to say
    _no_crash(tmp_path, r)


@needs_new
def test_concurrent_first_calls_boot_one_runtime(apps, tmp_path):
    r = _java(apps, tmp_path, ["App", "race"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "runtimes 1 errors []" in r.stdout, r.stdout + r.stderr[-3000:]


@needs_new
def test_concurrent_first_calls_of_a_boot_that_fails_each_get_the_typed_error(apps, tmp_path):
    """Six threads ask while the runtime cannot boot (the named Python is gone): every one gets
    NotAttachedException, none waits for ever on a boot that will not come."""
    r = _java(apps, tmp_path, ["App", "race"], env=_env(apps, tmp_path, ISTHMUS_PYTHON=str(tmp_path / "gone")))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "runtimes 0 errors [NotAttachedException]" in r.stdout, r.stdout + r.stderr[-3000:]


@needs_new
@pytest.mark.parametrize("sig, rc, opens", [(signal.SIGTERM, 143, True), (signal.SIGINT, 130, True),
                                            (signal.SIGTERM, 143, False)])
def test_signals_run_the_hooks_and_exit_with_javas_status(apps, tmp_path, sig, rc, opens):
    """The application's hooks reach the runtime, with java.lang opened on the command line (as `isthmus
    java` does) or not: the boot opens it (the stand-in's isthmus_open_java_lang), so the runtime's
    shutdown step runs after the application's hooks and no call enters the bridge after it closed (without
    that, a call of the busy loop made after JPype's hook crashed the JVM: SIGSEGV in _jpype.so)."""
    x = np.random.default_rng().standard_normal(101).astype(np.float32)
    opts = ["--add-opens=java.base/java.lang=ALL-UNNAMED"] if opens else []
    cmd = [str(NEW / "bin" / "java"), "--enable-native-access=ALL-UNNAMED", *opts, "-cp", _cp(apps), "App", "busy",
           _csv(x)]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(apps, tmp_path))
    seen = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        seen.append(line)
        if line.strip() == "busy" or not line:
            break
    time.sleep(0.5)  # inside the loop, with calls under way
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    out = "".join(seen) + out
    assert p.returncode == rc, out[-3000:] + err[-3000:]
    assert "hook ran" in out
    hook = re.search(r"^hook (sum (\S+)|refused (\w+))$", out, re.M)
    assert hook, out[-2000:]
    x64 = x.astype(np.float64)
    assert hook.group(2) is not None and np.isclose(float(hook.group(2)), x64.sum(), rtol=1e-5,
                                                    atol=1e-6 * np.abs(x64).sum()), out[-2000:]
    assert (tmp_path / f"atexit-{_pid(out)}").read_text() == "ran"
    assert not list(tmp_path.glob("hs_err_pid*.log")) and "SIGSEGV" not in err, err[-3000:]


# ---- the typed errors ------------------------------------------------------------------------
def _probe(apps, tmp_path, **kw) -> str:
    r = _java(apps, tmp_path, ["Probe"], **kw)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip()


@pytest.mark.skipif(OLD is None, reason="needs a Java 17-21 that can compile (javac or jdk.compiler)")
def test_before_jdk22_a_plain_jvm_keeps_not_attached_naming_both_ways(apps, tmp_path):
    said = _probe(apps, tmp_path, home=OLD)
    assert said.startswith("NotAttachedException: the isthmus runtime is not attached"), said
    assert "isthmus java" in said and "isthmus jvm-home" in said  # the first way
    assert "JDK 22 or later" in said and "-Disthmus.python" in said and "ISTHMUS_PYTHON" in said  # the second
    assert re.search(r"this JVM is Java 1[7-9]|this JVM is Java 2[01]", said)


@needs_new
def test_no_python_named_says_how_to_name_one(apps, tmp_path):
    env = _env(apps, tmp_path, HOME=str(tmp_path))  # no record in this home
    del env["ISTHMUS_PYTHON"]
    said = _probe(apps, tmp_path, env=env)
    assert said.startswith("NotAttachedException:") and "-Disthmus.python=PATH" in said and "ISTHMUS_PYTHON" in said
    assert "isthmus maven-install" in said and str(tmp_path / ".isthmus" / "python") in said

    (tmp_path / ".isthmus").mkdir()
    (tmp_path / ".isthmus" / "python").write_text(str(tmp_path / "gone" / "python") + "\n")  # a venv removed since
    said = _probe(apps, tmp_path, env=env)
    assert said.startswith(f"NotAttachedException: the Python named by {tmp_path / '.isthmus' / 'python'}"), said
    assert "-Disthmus.python=PATH" in said and "`isthmus maven-install` or `isthmus jvm-home` again" in said
    assert "isthmus java -cp" in said  # and the other way to run

    (tmp_path / ".isthmus" / "python").write_text(sys.executable + "\n")  # what maven-install records
    assert _probe(apps, tmp_path, env=env) == "ATTACHED"


@needs_new
def test_a_python_that_is_not_there_is_named(apps, tmp_path):
    gone = tmp_path / "gone" / "bin" / "python"
    said = _probe(apps, tmp_path, opts=[f"-Disthmus.python={gone}"])  # the property wins over ISTHMUS_PYTHON
    assert said.startswith("NotAttachedException: the Python named by -Disthmus.python") and str(gone) in said


@needs_new
def test_without_jpype_support_classes_names_the_dependency(apps, tmp_path):
    said = _probe(apps, tmp_path, jpype=False)
    assert said.startswith("NotAttachedException: JPype's Java support classes (org.jpype.jar)"), said
    assert "io.isthmus:jpype-support" in said and str(hosted.jpype_jar()) in said


@needs_new
def test_another_jpypes_support_classes_are_refused(apps, tmp_path):
    other = tmp_path / "old-jpype.jar"
    with zipfile.ZipFile(hosted.jpype_jar()) as src, zipfile.ZipFile(other, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            dst.writestr(item, data + b"\0" if item.filename == hosted.JPYPE_PROBE else data)
    cmd = [str(NEW / "bin" / "java"), "--enable-native-access=ALL-UNNAMED", "-cp",
           os.pathsep.join([_cp(apps, jpype=False), str(other)]), "Probe"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env(apps, tmp_path))
    said = r.stdout.strip()
    assert said.startswith("NotAttachedException: the org.jpype classes on this JVM's class path"), said
    assert "isthmus maven-install" in said and "old-jpype.jar" in said


# ---- the Python side, without a JVM ------------------------------------------------------------
def test_describe_names_what_an_embedding_needs():
    lines = hosted.describe()
    d = dict(lines)
    assert Path(d["libpython"]).is_file() and d["version"] == sysconfig.get_python_version() + d["version"][4:]
    assert d["python"] == sys.executable and Path(d["standin"]).is_file()
    assert [p for k, p in lines if k == "path"] == [p for p in sys.path if p and os.path.exists(p)]
    r = subprocess.run([sys.executable, "-m", "isthmus.java.hosted", "describe"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and f"libpython={d['libpython']}" in r.stdout.splitlines()


def test_the_stand_in_exports_the_jni_entry_points():
    lib = hosted.standin()
    assert lib == hosted.standin()  # compiled once, then found
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True)
    if nm.returncode == 0:
        assert {"JNI_CreateJavaVM", "JNI_GetCreatedJavaVMs"} <= set(re.findall(r"\bJNI_\w+", nm.stdout))


def test_without_a_c_compiler_the_stand_in_is_a_typed_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ISTHMUS_CACHE_DIR", str(tmp_path))  # nothing compiled there yet
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BackendUnavailableError, match=r"needs a small native library compiled once with a C "
                                                      r"compiler, and none \(cc, gcc, clang\) is on PATH"):
        hosted.standin()


def test_a_python_without_shared_libpython_is_a_typed_error(monkeypatch, tmp_path):
    """A static build (Py_ENABLE_SHARED=0, only libpython*.a): said in the describe line the JVM shows."""
    real = sysconfig.get_config_var
    fake = {"Py_ENABLE_SHARED": 0, "LIBDIR": str(tmp_path), "INSTSONAME": "libpython3.x.a",
            "LDLIBRARY": "libpython3.x.a", "PYTHONFRAMEWORKPREFIX": ""}
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: fake.get(name, real(name)))
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path))
    (tmp_path / "libpython3.x.a").write_bytes(b"!<arch>\n")
    with pytest.raises(BackendUnavailableError, match=r"has no shared libpython \(Py_ENABLE_SHARED=0"):
        hosted.libpython()
    monkeypatch.setattr(sys, "argv", ["x"])
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert hosted.main(["describe"]) == 2
    assert buf.getvalue().startswith("error=BackendUnavailableError: the Python at") and buf.getvalue().count("\n") == 1


def test_maven_install_brings_jpype_support_and_records_the_python(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    jar = jvm.packaged_jar()
    if jar is None:
        pytest.skip("needs the packaged jar (make jar)")
    from isthmus.cli.java import maven_install

    repo = tmp_path / "repo"
    assert maven_install(["--repo", str(repo)]) == 0
    import jpype

    v = jpype.__version__
    support = repo / "io" / "isthmus" / maven.JPYPE_ARTIFACT / v
    assert (support / f"{maven.JPYPE_ARTIFACT}-{v}.jar").read_bytes() == hosted.jpype_jar().read_bytes()
    pom = (repo / "io" / "isthmus" / "isthmus" / jvm.__version__ / f"isthmus-{jvm.__version__}.pom").read_text()
    dep = re.search(r"<dependency>\s*<groupId>io.isthmus</groupId>\s*<artifactId>jpype-support</artifactId>\s*"
                    r"<version>([^<]+)</version>\s*<scope>runtime</scope>", pom)
    assert dep and dep.group(1) == v
    assert (tmp_path / ".isthmus" / "python").read_text().strip() == sys.executable
