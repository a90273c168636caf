"""The two build steps pyproject.toml cannot declare (everything else is there).

1. The packages: ``python/isthmus/...`` plus the top-level ``opencl/`` folder, which the design
   keeps at the top level and the wheel carries as the package ``isthmus.opencl`` (kernel sources
   and the CUDA prelude are package data, found at run time through the package, never the checkout).
2. The Java artifact io.isthmus:isthmus: Maven builds the jar, its sources and javadoc jars from
   ``java/`` during the wheel build, and they go with the pom into ``isthmus/java/lib``, whence
   ``isthmus maven-install`` puts them into a local Maven repository. An editable install skips
   this step (``make jar`` copies the jar into the source tree instead).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.errors import SetupError

HERE = Path(__file__).resolve().parent
MVN_ARGS = ("-q", "-B", "-ntp", "package", "-Dmaven.test.skip=true")


class JavaBuildError(SetupError):
    """The Java artifact could not be built (setuptools prints it as one ``error:`` line)."""


def _version() -> str:
    text = (HERE / "python" / "isthmus" / "_version.py").read_text()
    return re.search(r'__version__\s*=\s*"([^"]+)"', text).group(1)


def _pom_version() -> str:
    # the project's own <version>: the first one after </parent> or, without a parent, after <artifactId>
    text = re.sub(r"<!--.*?-->", "", (HERE / "pom.xml").read_text(), flags=re.S)
    return re.search(r"<artifactId>isthmus</artifactId>\s*<version>([^<]+)</version>", text).group(1).strip()


def _check_tools() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaBuildError(
            "isthmus: Maven (mvn) is not on PATH; the wheel carries the Java artifact, which Maven 3.6+ builds with "
            "a JDK 17+ (Debian/Ubuntu: apt-get install maven openjdk-17-jdk-headless), then build again")
    java_home = os.environ.get("JAVA_HOME")
    javac = Path(java_home, "bin", "javac") if java_home else shutil.which("javac")
    if not javac or not Path(javac).exists():
        where = f"JAVA_HOME={java_home} has no bin/javac" if java_home else "javac is not on PATH"
        raise JavaBuildError(f"isthmus: a JDK 17+ is needed to build the Java artifact ({where}; a JRE is not "
                             "enough): install one (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless) or set "
                             "JAVA_HOME to it, then build again")
    return mvn


def build_java(dest: Path) -> list[Path]:
    """Run Maven on ``java/`` and copy jar, sources jar, javadoc jar and pom into ``dest``."""
    version = _version()
    if _pom_version() != version:
        raise JavaBuildError(f"isthmus: pom.xml has version {_pom_version()} but the Python package {version}; "
                             "make them equal")
    mvn = _check_tools()
    done = subprocess.run([mvn, *MVN_ARGS], cwd=HERE, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise JavaBuildError(f"isthmus: Maven failed to build the Java artifact (mvn {' '.join(MVN_ARGS)} in {HERE}, "
                             f"exit {done.returncode}):\n{tail}")
    target = HERE / "target"
    sources = {f"isthmus-{version}{suffix}.jar": target / f"isthmus-{version}{suffix}.jar"
               for suffix in ("", "-sources", "-javadoc")}
    sources[f"isthmus-{version}.pom"] = HERE / "pom.xml"
    dest.mkdir(parents=True, exist_ok=True)
    for stale in dest.glob("isthmus-*"):
        stale.unlink()
    out = []
    for name, src in sources.items():
        if not src.is_file():
            raise JavaBuildError(f"isthmus: Maven finished but {src} is missing")
        out.append(Path(shutil.copyfile(src, dest / name)))
    return out


class BuildPy(build_py):
    """build_py, then the Java artifact into the build's ``isthmus/java/lib``."""

    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):
            self.java_outputs = [str(p) for p in build_java(Path(self.build_lib) / "isthmus" / "java" / "lib")]

    def get_outputs(self, include_bytecode=True):
        return [*super().get_outputs(include_bytecode), *getattr(self, "java_outputs", ())]


if __name__ == "__main__":  # setuptools' build backend runs this file as __main__; tests import it
    setup(
        packages=[*find_packages("python"), "isthmus.tune.bundled", "isthmus.java.native", "isthmus.opencl"],
        cmdclass={"build_py": BuildPy},
    )
