"""``isthmus jvm-home`` (:mod:`isthmus.cli.java`): a folder that looks like a Java home whose ``bin/java`` is ``isthmus java``
run by this very Python interpreter, for tools that want a ``java`` executable: Maven surefire's
``<jvm>`` (tests run on the real runtime), IDE run configurations, ``exec``.

    isthmus jvm-home                 # creates ~/.isthmus/jvm, prints the folder
    isthmus jvm-home DIR             # somewhere else

Its ``bin/java`` names the interpreter by absolute path, so it keeps working without activating
the environment; when that interpreter is gone it says so in one line on stderr (build tools
show the forked process's stderr) instead of a bare "exit 127". It answers the probes tools make
(``-version``, ``--version``, ``-fullversion``, ``-XshowSettings``) as the hosted JDK's ``java`` does. Surefire sets ``JAVA_HOME`` to
this folder for the process it forks; ``bin/java`` puts back the JDK that JPype found when the
folder was made, so the hosted JVM is a real one. ``release`` carries that JDK's version, which
surefire reads to pick its launch options.
"""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from isthmus import knobs
from isthmus._version import __version__

DEFAULT = Path("~/.isthmus/jvm")
MIN_JAVA = "17"  # the artifact's bytecode level (pom.xml: maven.compiler.release)

_SCRIPT = """#!/bin/sh
# `java` for build tools and IDEs, made by `isthmus jvm-home` (isthmus {version}): the same command
# line, run by `isthmus java` inside the Python below, with the isthmus runtime attached.
py={python}
jdk={jdk}
here=$(cd "$(dirname "$0")/.." && pwd -P)
if [ -n "${{JAVA_HOME:-}}" ] && [ "$(cd "$JAVA_HOME" 2>/dev/null && pwd -P)" = "$here" ]; then
  # surefire points JAVA_HOME at this folder; the hosted JVM must come from a real JDK
  if [ -n "$jdk" ] && [ -d "$jdk" ]; then JAVA_HOME=$jdk; export JAVA_HOME; else unset JAVA_HOME; fi
fi
if [ ! -x "$py" ]; then
  echo "isthmus: $0 runs $py, which no longer exists;" \
    "run \\`isthmus jvm-home\\` again with the Python that has isthmus installed" >&2
  exit 127
fi
exec "$py" -m isthmus.java "$@"
"""


def jdk_home() -> Path | None:
    """The Java home of the JVM JPype would host (found without starting it), or None."""
    try:
        import jpype

        libjvm = Path(knobs.jvm_path() or jpype.getDefaultJVMPath()).resolve()
    except Exception:  # noqa: BLE001 - no JPype or no JVM: bin/java will say so when it runs
        return None
    return next((p for p in libjvm.parents if (p / "bin" / "java").exists() or (p / "release").is_file()), None)


def _java_version(jdk: Path | None) -> str:
    if jdk is not None:
        try:
            found = re.search(r'^JAVA_VERSION="?([^"\n]+)"?', (jdk / "release").read_text(), re.M)
        except OSError:
            found = None
        if found:
            return found.group(1)
    return MIN_JAVA


def create(home: Path, python: str | None = None) -> Path:
    """Write ``home/bin/java`` (running ``python``, default this interpreter) and ``home/release``."""
    home = home.expanduser().absolute()
    jdk = jdk_home()
    (home / "bin").mkdir(parents=True, exist_ok=True)
    script = home / "bin" / "java"
    script.write_text(_SCRIPT.format(version=__version__, python=shlex.quote(python or sys.executable),
                                     jdk=shlex.quote(str(jdk) if jdk else "")))
    script.chmod(0o755)
    (home / "release").write_text(f'JAVA_VERSION="{_java_version(jdk)}"\nIMPLEMENTOR="isthmus java launcher"\n')
    return home
