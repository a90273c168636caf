"""`isthmus java`: run in a subprocess like a user would; stdout/stderr pass through and the
exit code is main's, also after System.exit."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from isthmus.java.launcher import Command, UsageError, parse

APPS = Path(__file__).resolve().parent / "apps"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    import isthmus.java

    if shutil.which("javac") is None or shutil.which("jar") is None:
        pytest.skip("needs a JDK (javac, jar) to build the test application")
    out = tmp_path_factory.mktemp("app")
    cp = os.pathsep.join(isthmus.java.classpath())
    subprocess.run(["javac", "--release", "17", "-cp", cp, "-d", str(out / "classes"),
                    *(str(APPS / "demo" / f"{name}.java") for name in ("Exits", "Threads", "Serve"))], check=True)
    (out / "manifest.txt").write_text("Main-Class: demo.Exits\n")
    subprocess.run(["jar", "cfm", str(out / "app.jar"), str(out / "manifest.txt"), "-C", str(out / "classes"), "."],
                   check=True)
    return out


def java(*argv, atexit_marker=False):
    code = "import sys; from isthmus.java.launcher import main; sys.exit(main(sys.argv[1:]))"
    if atexit_marker:
        code = "import atexit; atexit.register(lambda: print('python-atexit-ran', flush=True)); " + code
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


def test_main_returns(app):
    r = java("-cp", str(app / "classes"), "demo.Exits", "return", "x")
    assert r.returncode == 0, r.stderr
    assert "sum=6.0 args=return,x" in r.stdout
    assert "to stderr" in r.stderr


@pytest.mark.parametrize("status", ["0", "3", "42"])
def test_system_exit_status_and_python_exit_handlers(app, status):
    r = java("-Dsome.prop=1", "-jar", str(app / "app.jar"), status, atexit_marker=True)
    assert r.returncode == int(status), r.stderr
    assert "sum=6.0" in r.stdout
    assert "python-atexit-ran" in r.stdout  # System.exit did not skip Python's handlers


def test_exception_in_main(app):
    r = java("-cp", str(app / "classes"), "demo.Exits", "throw")
    assert r.returncode == 1
    assert 'Exception in thread "main" java.lang.IllegalStateException: boom' in r.stderr


@pytest.mark.parametrize("how, status", [("return", 0), ("throw", 1), ("exit", 7)])
def test_non_daemon_threads_outlive_main_with_the_runtime_attached(app, how, status):
    r = java("-cp", str(app / "classes"), "demo.Threads", how, str(status), atexit_marker=True)
    assert r.returncode == status, r.stderr
    lines = r.stdout.splitlines()
    assert lines.index("main done") < min(lines.index(f"worker-{i} sum={i + 3}.0") for i in range(3)), r.stdout
    assert "NotAttached" not in r.stderr and "Exception in thread \"worker" not in r.stderr, r.stderr
    assert "python-atexit-ran" in r.stdout
    if how == "throw":
        assert 'Exception in thread "main" java.lang.IllegalStateException: main failed' in r.stderr


SYSTEM_EXIT_SCRIPT = """
import atexit, sys
import isthmus, isthmus.java, jpype
isthmus.java.start()
atexit.register(lambda: print("python-atexit-ran", flush=True))
x = isthmus.device().zeros(3, "float32")
jpype.JClass("io.isthmus.Ops").sum(isthmus.java.to_java(x)).close()
print("before exit", flush=True)
jpype.JClass("java.lang.System").exit(int(sys.argv[1]))
print("not reached", flush=True)
"""


@pytest.mark.parametrize("status", [0, 5, 5, 9])
def test_system_exit_in_a_plain_python_script_runs_python_exit_handlers(status):
    r = subprocess.run([sys.executable, "-c", SYSTEM_EXIT_SCRIPT, str(status)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == status, r.stderr
    assert r.stdout.split() == ["before", "exit", "python-atexit-ran"], (r.stdout, r.stderr)


def test_a_normal_exit_after_starting_the_jvm_runs_python_exit_handlers_once():
    script = SYSTEM_EXIT_SCRIPT.replace('jpype.JClass("java.lang.System").exit(int(sys.argv[1]))', "sys.exit(4)")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 4, r.stderr
    assert r.stdout.split() == ["before", "exit", "python-atexit-ran"], (r.stdout, r.stderr)  # once, not twice


def test_missing_class_and_bad_usage(app):
    r = java("-cp", str(app / "classes"), "demo.Nope")
    assert r.returncode == 1 and "Could not find or load main class demo.Nope" in r.stderr
    assert java().returncode == 2
    assert java("-jar", str(app / "missing.jar")).returncode == 2


def test_parse_accepts_java_options(tmp_path):
    argfile = tmp_path / "args"
    argfile.write_text("-Xmx256m -cp a:b")
    cmd = parse([f"@{argfile}", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-ea", "M", "-cp", "x"])
    assert cmd == Command("M", ("-cp", "x"), ("a", "b"), ("-Xmx256m", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-ea"))
    with pytest.raises(UsageError):
        parse(["-Xmx1g"])


# ---- a JVM shutdown while threads call the runtime: signals and System.exit ------------------
def _stop_when_ready(argv, sig, cwd, ready="ready"):
    """Start ``argv``, wait for a line holding ``ready``, send ``sig``; (returncode, stdout, stderr)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                         start_new_session=True)  # SIGINT not ignored as in a background job
    seen = ""
    watchdog = threading.Timer(180, p.kill)  # a hang fails the test instead of blocking the run
    watchdog.start()
    try:
        while True:  # (another thread's line may share the marker's: System.out and print are two streams)
            line = p.stdout.readline()
            assert line, (seen, p.communicate(timeout=60)[1], p.returncode)  # it ended before it was ready
            seen += line
            if ready in line:
                break
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
    return p.returncode, seen + out, err


def _clean_exit(cwd: Path, err: str) -> None:
    assert not list(cwd.glob("hs_err_pid*.log")) and not list(cwd.glob("core*")), err
    assert "SIGSEGV" not in err and "Exception" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_runs_the_shutdown_hooks_and_exits_with_its_status(app, tmp_path, sig, status):
    # main and two workers loop allocate/sum/close; the application's hook uses the runtime
    code, out, err = _stop_when_ready([sys.executable, "-m", "isthmus.java", "-cp", str(app / "classes"),
                                       "demo.Serve", "signal"], sig, tmp_path)
    assert code == status, err
    assert "hook sum=6.0" in out.splitlines(), (out, err)
    _clean_exit(tmp_path, err)


def test_a_thread_late_for_the_runtimes_step_parks_until_the_halt(app, tmp_path):
    # a worker that the OS did not run during the runtime's step calls afterwards: JPype's hook, had it
    # finished, would refuse it ("Proxy called during shutdown") or crash under it; "late" holds the JVM
    # 2 s after that hook (a JPype post hook), so every worker calls then if the hook is let finish
    code, out, err = _stop_when_ready([sys.executable, "-m", "isthmus.java", "-cp", str(app / "classes"),
                                       "demo.Serve", "late"], signal.SIGTERM, tmp_path)
    assert code == 143, err
    assert "hook sum=6.0" in out.splitlines(), (out, err)
    _clean_exit(tmp_path, err)


def test_system_exit_from_a_worker_while_other_threads_call_the_runtime(app, tmp_path):
    r = subprocess.run([sys.executable, "-m", "isthmus.java", "-cp", str(app / "classes"), "demo.Serve", "exit"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines()[-1] == "hook sum=6.0", r.stdout
    _clean_exit(tmp_path, r.stderr)


SIGNAL_SCRIPT = """
import atexit, sys, threading
import isthmus, isthmus.java, jpype
isthmus.java.start(classpath=[sys.argv[1]])
atexit.register(lambda: print("python-atexit-ran", flush=True))
serve = threading.Thread(target=jpype.JClass("demo.Serve").main, args=(["signal"],), daemon=True)
serve.start()  # Java threads calling the runtime
x = isthmus.device().zeros(3, "float32")
ops = jpype.JClass("io.isthmus.Ops")
for i in range(10 ** 9):  # and the main thread, through Java too
    ops.sum(isthmus.java.to_java(x)).close()
    if i == 20:
        print("main-ready", flush=True)
"""


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_a_python_program_that_started_the_jvm(app, tmp_path, sig, status):
    code, out, err = _stop_when_ready([sys.executable, "-c", SIGNAL_SCRIPT, str(app / "classes")], sig, tmp_path,
                                      ready="main-ready")
    assert code == status, err
    lines = out.splitlines()
    assert "hook sum=6.0" in lines and "python-atexit-ran" in lines, (out, err)
    _clean_exit(tmp_path, err)


def test_without_java_lang_opened_a_signal_still_exits_cleanly(app, tmp_path):
    """The JDK may refuse the runtime its hook order (no --add-opens): the runtime's step then runs
    beside the application's hooks, refusing late calls with an exception instead of parking them
    (a parked hook would hang the exit), and the process still exits 143 without a crash."""
    script = SIGNAL_SCRIPT.replace("import isthmus, isthmus.java, jpype",
                                   "import isthmus, isthmus.java, jpype, isthmus.java.jvm as j\n"
                                   "j._OPEN_JAVA_LANG = '-Disthmus.test.closed=1'")
    code, out, err = _stop_when_ready([sys.executable, "-c", script, str(app / "classes")], signal.SIGTERM, tmp_path,
                                      ready="main-ready")
    assert code == 143, err
    assert "python-atexit-ran" in out.splitlines(), (out, err)
    assert not list(tmp_path.glob("hs_err_pid*.log")) and "SIGSEGV" not in err, err
