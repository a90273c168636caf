"""``isthmus maven-install`` and ``isthmus jvm-home``: the Java artifact and a ``java`` for build
tools, without a checkout (:mod:`isthmus.java.maven`, :mod:`isthmus.java.jvm_home`). ``isthmus
java`` itself is the JVM launcher's (:mod:`isthmus.java.launcher`): its options are java's."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import __version__
from ..errors import IsthmusError
from ..java.jvm_home import DEFAULT, create
from ..java.maven import ARTIFACT, GROUP, install, local_repository


def maven_install(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="isthmus maven-install",
                                description=f"install {GROUP}:{ARTIFACT}:{__version__} (jar, pom, sources, javadoc) "
                                            "from this package into a local Maven repository")
    p.add_argument("--repo", default=None, metavar="DIR",
                   help="the local repository (default: -Dmaven.repo.local in MAVEN_OPTS, else ~/.m2/settings.xml's "
                        "localRepository, else ~/.m2/repository)")
    args = p.parse_args(argv)
    repo = local_repository(args.repo)
    try:
        written = install(repo)
    except (IsthmusError, OSError) as exc:
        print(f"isthmus maven-install: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(f"installed {GROUP}:{ARTIFACT}:{__version__} into {repo}:", file=sys.stderr)
    for path in written:
        print(f"  {path}", file=sys.stderr)
    print("tests run on the runtime through surefire's <jvm>: see `isthmus jvm-home`", file=sys.stderr)
    _record_for_hosted_jvms()
    return 0


def _record_for_hosted_jvms() -> None:
    """Record this interpreter for JVMs that boot the runtime by themselves (JDK 22+, :mod:`..java.hosted`)
    and prepare what they need; a Python that cannot be embedded is said in one line, not an error:
    `isthmus java` and jvm-home still work with it."""
    from ..java import hosted

    try:
        hosted.prepare()
    except IsthmusError as exc:
        print(f"note: JVMs started by their own host (JDK 22+) cannot boot isthmus from this Python: {exc}",
              file=sys.stderr)
        return
    path = hosted.record()
    print(f"JVMs started by their own host (JDK 22+) boot isthmus from {sys.executable} (recorded in {path}; "
          "-Disthmus.python or ISTHMUS_PYTHON name another)", file=sys.stderr)


def jvm_home(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="isthmus jvm-home",
                                description="create a Java home whose bin/java runs `isthmus java` with this Python "
                                            "(for surefire's <jvm>, IDEs); prints the folder")
    p.add_argument("dir", nargs="?", default=str(DEFAULT), help=f"where (default: {DEFAULT})")
    args = p.parse_args(argv)
    try:
        home = create(Path(args.dir))
    except OSError as exc:
        print(f"isthmus jvm-home: cannot create {args.dir}: {exc}", file=sys.stderr)
        return 2
    print(home)
    print(f"{home / 'bin' / 'java'} runs `isthmus java` with {sys.executable}", file=sys.stderr)
    _record_for_hosted_jvms()
    return 0
