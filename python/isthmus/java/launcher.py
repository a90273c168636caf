"""``isthmus java``: run a Java application's ``main`` in a JVM hosted by this Python process,
with the isthmus runtime attached.

    isthmus java [JVM_OPTIONS] [-cp CLASSPATH] MAIN_CLASS [ARGS...]
    isthmus java [JVM_OPTIONS] -jar APP.jar [ARGS...]

JVM options (``-Xmx2g``, ``-Dkey=value``, ``-XX:...``, ``-ea``, ``--add-opens X``, ``@argfile``) are
accepted like ``java`` does, so build tools can use this as their ``java`` (surefire's ``<jvm>``).
stdout and stderr are the process's own. Like ``java``, the launcher waits for the
application's non-daemon threads after ``main`` returns (the runtime stays attached for them).
The exit code is ``main``'s: 0 when it returns, 1 when it throws, and the status passed to
``System.exit``, which the JVM applies itself after a shutdown hook has flushed Python's streams
and run Python's exit handlers (see :func:`isthmus.java.jvm.start`); a signal's (143 for SIGTERM,
130 for SIGINT) after the application's shutdown hooks, as with ``java``.

The questions tools ask a JDK (``-version``, ``--version``, ``-fullversion``, ``-XshowSettings``
with no main class) are answered by the ``java`` of the JDK whose JVM this launcher hosts: its own
output and exit code, so IDEs, exec plugins and toolchains accept ``isthmus jvm-home``.
"""
from __future__ import annotations

import os
import shlex
import sys
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from isthmus.errors import IsthmusError

from . import jvm

USAGE = ("usage: isthmus java [JVM_OPTIONS] [-cp CLASSPATH] MAIN_CLASS [ARGS...]\n"
         "       isthmus java [JVM_OPTIONS] -jar APP.jar [ARGS...]")

# java options that print facts about the JVM and exit without running a main class
_VERSION_PROBES = {"-version", "--version", "-fullversion", "--full-version"}

# java options that take their value as the next argument
_TWO_TOKEN = {"--add-opens", "--add-exports", "--add-reads", "--add-modules", "--limit-modules",
              "--patch-module", "--module-path", "-p", "--upgrade-module-path", "--enable-native-access"}


@dataclass(frozen=True)
class Command:
    """A parsed ``isthmus java`` command line."""
    main_class: str
    args: tuple[str, ...] = ()
    classpath: tuple[str, ...] = ()
    jvm_args: tuple[str, ...] = field(default=())


class UsageError(Exception):
    """A command line ``isthmus java`` cannot run."""


def _manifest(jar: Path) -> dict[str, str]:
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise UsageError(f"Error: Invalid or corrupt jarfile {jar} ({exc})") from None
    entries: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line.startswith(" ") and key:  # continuation line (72-byte wrapping)
            entries[key] += line[1:]
        elif ":" in line:
            key, value = line.split(":", 1)
            entries[key.strip()] = value.strip()
    return entries


def _jar_command(jar: Path, args: list[str], jvm_args: list[str]) -> Command:
    if not jar.is_file():
        raise UsageError(f"Error: Unable to access jarfile {jar}")
    manifest = _manifest(jar)
    main = manifest.get("Main-Class")
    if not main:
        raise UsageError(f"no main manifest attribute, in {jar}")
    # Class-Path entries are relative to the jar's folder (an absolute one stays itself under pathlib's /)
    cp = [str(jar), *(str(jar.parent / url.removeprefix("file:")) for url in manifest.get("Class-Path", "").split())]
    return Command(main, tuple(args), tuple(cp), tuple(jvm_args))


def parse(argv: list[str]) -> Command:
    """Split a ``java``-style command line into JVM options, classpath, main class and args."""
    argv = list(argv)
    jvm_args: list[str] = []
    cp: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-cp", "-classpath", "--class-path"):
            if i + 1 >= len(argv):
                raise UsageError(f"Error: {a} requires class path specification")
            cp.extend(p for p in argv[i + 1].split(":") if p)
            i += 2
        elif a.startswith("--class-path="):
            argv[i:i + 1] = a.split("=", 1)  # read as "--class-path VALUE"
        elif a == "-jar":
            if i + 1 >= len(argv):
                raise UsageError("Error: -jar requires jar file specification")
            command = _jar_command(Path(argv[i + 1]), argv[i + 2:], jvm_args)
            return Command(command.main_class, command.args, tuple(cp) + command.classpath, command.jvm_args)
        elif a.startswith("@") and len(a) > 1:  # java's argument files, among the options only
            argv[i:i + 1] = shlex.split(Path(a[1:]).read_text())
        elif a in _TWO_TOKEN:
            jvm_args.extend(argv[i:i + 2])
            i += 2
        elif a.startswith("-"):
            jvm_args.append(a)
            i += 1
        else:
            return Command(a, tuple(argv[i + 1:]), tuple(cp), tuple(jvm_args))
    raise UsageError(USAGE)


def _join_non_daemon_threads() -> None:
    """Wait, like ``java`` does after ``main`` returns, until every non-daemon Java thread has
    ended. Python's threads attach to the JVM as daemons, so only the application's own threads
    are waited for.

    The Java joins run on a helper thread while this (main) thread waits in Python: when one of
    the application's threads calls System.exit, JPype's shutdown hook interrupts every non-daemon
    Java thread, main included, and then tears down its type system, so a main thread blocked in
    a Java join would wake up into a dead JPype and crash the process. Waiting outside Java, it
    simply stays put until the JVM ends the process with the status given to System.exit."""
    import jpype

    done = threading.Event()
    main = jpype.JClass("java.lang.Thread").currentThread()
    threading.Thread(target=_join_in_java, args=(main, done), name="isthmus-join-java-threads", daemon=True).start()
    done.wait()


def _join_in_java(main, done: threading.Event) -> None:
    import jpype

    thread = jpype.JClass("java.lang.Thread")
    try:
        while True:
            others = [t for t in thread.getAllStackTraces().keySet() if t.isAlive() and not t.isDaemon()
                      and not t.equals(main) and str(t.getName()) != "DestroyJavaVM"]
            if not others:
                return
            for t in others:
                t.join()
    finally:
        done.set()


def run(command: Command) -> int:
    """Run ``command``'s main with the runtime attached; returns the exit code (after the
    application's non-daemon threads have ended, as with ``java``)."""
    import jpype

    jvm.start(list(command.classpath), command.jvm_args)
    code = 0
    try:
        try:
            main_class = jpype.JClass(command.main_class)
        except (TypeError, ImportError, jpype.JException) as exc:
            print(f"Error: Could not find or load main class {command.main_class}\n"
                  f"Caused by: {exc}", file=sys.stderr)
            return 1
        try:
            main_class.main(jpype.JArray(jpype.JString)(list(command.args)))
        except jpype.JException as exc:
            if jvm.exiting():  # a signal or System.exit: main stops where it is, as with `java`
                jvm.wait_for_exit()
            # what java prints for an exception escaping main
            err = jpype.JClass("java.lang.System").err
            err.print_('Exception in thread "main" ')
            exc.printStackTrace()
            err.flush()
            code = 1
        except AttributeError:
            print(f"Error: Main method not found in class {command.main_class}, please define the main method as:\n"
                  "   public static void main(String[] args)", file=sys.stderr)
            code = 1
        if jvm.exiting():
            jvm.wait_for_exit()
        # The runtime stays attached (and System.exit from those threads keeps its status and
        # Python's exit handlers) until the application's own threads are done.
        _join_non_daemon_threads()
    finally:
        jpype.JClass("java.lang.System").out.flush()
    return code


def _startup_problem(exc: BaseException) -> str | None:
    """One line for what keeps the JVM from starting (no JPype, no JVM, no isthmus jar), else None:
    build tools show a launcher's stderr, and the cause must not drown in a traceback."""
    if isinstance(exc, IsthmusError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ImportError) and exc.name == "jpype":
        return ("JPype is not installed in this Python; install it (pip install jpype1, or the extra "
                "isthmus[java]) in the environment that has isthmus")
    if type(exc).__name__ in ("JVMNotFoundException", "JVMNotSupportedException"):
        return (f"no usable JVM ({exc}); install a JDK 17+ and set JAVA_HOME to it, or point ISTHMUS_JVM at its "
                "libjvm")
    return None


def probe(argv: list[str]) -> bool:
    """Whether ``argv`` asks about the JVM instead of running an application: a version option
    before the main class, or ``-XshowSettings`` with no main class (``java`` then exits)."""
    try:
        options = list(parse(argv).jvm_args)
        has_main = True
    except (UsageError, OSError):
        options, has_main = argv, False
    return any(a in _VERSION_PROBES for a in options) or (
        not has_main and any(a.startswith("-XshowSettings") for a in options))


def _answer_probe(argv: list[str]) -> int:
    """Run the hosted JDK's own ``java`` with ``argv`` in place of this process."""
    from .jvm_home import jdk_home

    home = jdk_home()
    java = home / "bin" / "java" if home is not None else None
    if java is None or not java.is_file():
        print(f"isthmus java: cannot answer {' '.join(argv)}: no bin/java in the JDK of the JVM isthmus hosts "
              f"({home or 'none found'}); set JAVA_HOME to a JDK 17+", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(java, [str(java), *argv])
    return 1  # not reached


def main(argv: list[str]) -> int:
    """Entry point of ``isthmus java`` (dispatched by ``isthmus.cli``)."""
    if not argv or argv[0] in ("-h", "--help", "-help"):
        print(USAGE)
        return 0 if argv else 2
    if probe(argv):
        return _answer_probe(argv)
    try:
        command = parse(argv)
    except (UsageError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        code = run(command)
    except Exception as exc:  # noqa: BLE001 - narrowed by _startup_problem; anything else propagates
        problem = _startup_problem(exc)
        if problem is None:
            raise
        print(f"isthmus java: {problem}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    # like `java`: the process ends when non-daemon Java threads have finished (shutdown waits)
    jvm.shutdown()
    return code


if __name__ == "__main__":  # python -m isthmus.java.launcher ...
    sys.exit(main(sys.argv[1:]))
