"""What the tests of JVMs started by their own host share (test_hosted.py, test_hosted_hosts.py): the
Java runtimes installed here, how to compile with them (javac, or the jdk.compiler module of a jlinked
runtime such as the GPU machine's), the isthmus jar, the environment a hosted JVM runs with."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np

JVM_ROOT = Path("/usr/lib/jvm")


def _release(home: Path) -> str:
    try:
        return (home / "release").read_text()
    except OSError:
        return ""


def can_compile(home: Path) -> bool:
    """javac, or a runtime with the jdk.compiler module (a jlinked JRE: `java -m jdk.compiler/...`)."""
    return (home / "bin" / "javac").is_file() or re.search(r'^MODULES=".*\bjdk\.compiler\b', _release(home), re.M) is not None


def javac(home: Path) -> list[str]:
    if (home / "bin" / "javac").is_file():
        return [str(home / "bin" / "javac")]
    return [str(home / "bin" / "java"), "-m", "jdk.compiler/com.sun.tools.javac.Main"]


def java_homes() -> list[tuple[int, Path]]:
    """(feature version, home) of the Java runtimes here that can compile, newest first (JAVA_HOME included)."""
    given = Path(os.environ["JAVA_HOME"]).resolve() if os.environ.get("JAVA_HOME") else None
    homes = {given} if given else set()
    homes |= set(JVM_ROOT.iterdir()) if JVM_ROOT.is_dir() else set()
    found = {}
    for home in homes:
        m = re.search(r'^JAVA_VERSION="(\d+)', _release(home), re.M)
        if m and (home / "bin" / "java").is_file() and can_compile(home):
            found[home.resolve()] = int(m.group(1))
    # JAVA_HOME first among runtimes of one version
    return [(v, h) for v, _, h in sorted(((v, h == given, h) for h, v in found.items()), reverse=True)]


def isthmus_jar() -> Path | None:
    """The packaged jar (make jar), else the classpath entry that holds io.isthmus (the GPU machine:
    ISTHMUS_CLASSPATH)."""
    from isthmus import knobs
    from isthmus.java import jvm

    jar = jvm.packaged_jar()
    if jar is None:
        jar = next((Path(e) for e in knobs.classpath() if str(e).endswith(".jar") and jvm._holds_isthmus(str(e))),
                   None)  # noqa: SLF001
    return jar


def hosted_env(**extra) -> dict:
    """The environment of a JVM that boots the runtime from this interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("ISTHMUS_PYTHON", "PYTHONHOME", "JAVA_TOOL_OPTIONS")}
    env.update(ISTHMUS_PYTHON=sys.executable)
    env.update(extra)
    return env


def csv(x: np.ndarray) -> str:
    return ",".join(repr(float(v)) for v in x)
