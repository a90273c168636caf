"""The installed wheel is the product (DESIGN.md, Packaging).

Builds the sdist and, from it, the wheel as a user would (``python -m build``: the wheel is built
from the unpacked sdist, so the sdist is proven to build it), checks what the wheel carries,
installs it into a fresh virtual environment (pip fetches numpy, pyopencl, jpype1, ... through its
cache), and then, from a folder that has never seen the checkout and with nothing pointing back at
it: the README's Python example, ``isthmus demo``, a Java main through ``isthmus java``, and
``mvn -o test`` of the README's minimal Maven project on the artifact that ``isthmus
maven-install`` put into a local repository (Maven resolving from local repositories only).

``make test`` and CI run it; ``ISTHMUS_SKIP_PACKAGING=1`` skips it locally.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from isthmus import __version__
from isthmus.java import maven

REPO = Path(__file__).resolve().parents[2]
V = __version__

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.skipif(os.environ.get("ISTHMUS_SKIP_PACKAGING", "") not in ("", "0"),
                       reason=f"ISTHMUS_SKIP_PACKAGING={os.environ.get('ISTHMUS_SKIP_PACKAGING')}"),
]


def _run(cmd, *, cwd, env=None, timeout=600, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {r.returncode}\n--- stdout\n{r.stdout[-6000:]}\n"
                    f"--- stderr\n{r.stderr[-6000:]}")
    return r


def _snapshot(dest: Path) -> Path:
    """A copy of the checkout's sources (git's tracked and untracked-but-not-ignored files; without
    git, the tree less what .gitignore names here): the build reads a tree no concurrent test writes
    into (bytecode caches, egg-info, jars), as a user's build of a clean checkout does."""
    r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                       capture_output=True)
    if r.returncode == 0 and r.stdout:
        for name in r.stdout.decode().split("\0"):
            if name and (REPO / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, dest / name)
        return dest
    ignore = shutil.ignore_patterns(".git", ".venv", "target", "__pycache__", "*.egg-info", ".device", ".devjava")
    shutil.copytree(REPO, dest, ignore=ignore, dirs_exist_ok=True)
    shutil.rmtree(dest / "python" / "isthmus" / "java" / "lib", ignore_errors=True)
    return dest


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    src = _snapshot(tmp_path_factory.mktemp("src"))
    _run([sys.executable, "-m", "build", "--outdir", out, src], cwd=out, timeout=900)
    sdist, wheel = out / f"isthmus-{V}.tar.gz", out / f"isthmus-{V}-py3-none-any.whl"
    assert sdist.is_file() and wheel.is_file(), sorted(p.name for p in out.iterdir())
    return sdist, wheel


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A working folder outside the checkout."""
    folder = tmp_path_factory.mktemp("user")
    assert REPO not in folder.parents
    return folder


@pytest.fixture(scope="module")
def venv(dist, outside):
    """A fresh virtual environment with the wheel (and its opencl and java extras) installed."""
    env_dir = outside / "venv"
    _run([sys.executable, "-m", "venv", env_dir], cwd=outside)
    py = env_dir / "bin" / "python"
    _run([py, "-m", "pip", "install", "-q", f"{dist[1]}[opencl,java]"], cwd=outside, timeout=900)
    return env_dir


@pytest.fixture(scope="module")
def user_env(venv, outside):
    """The environment of a user of the installed wheel: its bin first on PATH, nothing that points
    at the checkout, private caches."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "ISTHMUS_KERNEL_DIR", "ISTHMUS_CLASSPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["ISTHMUS_CACHE_DIR"] = str(outside / "cache")
    env["ISTHMUS_TUNING_DB"] = str(outside / "cache" / "tuning.sqlite")
    return env


def test_wheel_and_sdist_carry_everything(dist):
    sdist, wheel = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    kernels = {p.name for p in (REPO / "opencl").iterdir() if p.suffix in (".cl", ".h")}
    assert {"dtype.h", "cuda_prelude.h"} <= kernels
    assert {f"isthmus/opencl/{k}" for k in kernels} <= names
    bundled = {p.name for p in (REPO / "python" / "isthmus" / "tune" / "bundled").glob("*.json")}
    assert bundled and {f"isthmus/tune/bundled/{b}" for b in bundled} <= names
    lib = {f"isthmus/java/lib/isthmus-{V}{s}" for s in (".jar", ".pom", "-sources.jar", "-javadoc.jar")}
    assert lib <= names
    assert {"isthmus/py.typed", "isthmus/ops/__init__.pyi", f"isthmus-{V}.dist-info/licenses/LICENSE",
            "isthmus/__main__.py", "isthmus/java/native/standin.c"} <= names  # (the hosted JVM's stand-in source)
    assert not any(n.startswith(("tests/", "benchmarks/", "examples/")) for n in names)
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(f"isthmus-{V}.dist-info/METADATA").decode()
        entry_points = z.read(f"isthmus-{V}.dist-info/entry_points.txt").decode()
        jar = z.read(f"isthmus/java/lib/isthmus-{V}.jar")
        pom = z.read(f"isthmus/java/lib/isthmus-{V}.pom").decode()
    assert "License-Expression: Apache-2.0" in metadata and f"Version: {V}" in metadata
    assert "isthmus = isthmus.cli:main" in entry_points
    assert f"<version>{V}</version>" in pom and "<artifactId>isthmus</artifactId>" in pom
    (jar_path := wheel.parent / "inner.jar").write_bytes(jar)
    assert "io/isthmus/Isthmus.class" in zipfile.ZipFile(jar_path).namelist()
    with tarfile.open(sdist) as t:
        inside = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"pom.xml", "setup.py", "LICENSE", "java/src/main/java/io/isthmus/Isthmus.java",
            "opencl/dtype.h", "python/isthmus/__init__.py"} <= inside
    assert not any(n.startswith("python/isthmus/java/lib/") and n.endswith(".jar") for n in inside)


def _readme_block(lang: str, containing: str) -> str:
    blocks = re.findall(rf"```{lang}\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    found = [b for b in blocks if containing in b]
    assert found, f"README.md has no ```{lang} block with {containing!r}"
    return found[0]


def test_python_from_the_wheel_outside_the_checkout(venv, outside, user_env):
    py = venv / "bin" / "python"
    probe = ("import isthmus, isthmus.knobs as k, isthmus.java.jvm as j\n"
             "print(isthmus.__file__); print(k.kernel_dir()); print(j.packaged_jar())\n")
    paths = _run([py, "-c", probe], cwd=outside, env=user_env).stdout.split()
    for p in paths:  # the package, its kernel sources and its jar: all in the fresh environment
        assert Path(p).is_relative_to(venv), paths
    (outside / "readme_example.py").write_text(_readme_block("python", "isthmus.ops.axpy"))
    r = _run([py, "readme_example.py"], cwd=outside, env=user_env)
    lines = r.stdout.split("\n")
    assert 0.5e6 < float(lines[0]) < 2.5e6  # sum of 2x + 0 for x uniform in [0, 1)
    assert _run(["isthmus", "--version"], cwd=outside, env=user_env).stdout.strip() == f"isthmus {V}"
    demo = _run(["isthmus", "demo"], cwd=outside, env=user_env, timeout=600)
    assert demo.stdout.count(" ok ") >= 6 and "FAIL" not in demo.stdout, demo.stdout[-3000:]


HELLO = """
import io.isthmus.*;

public class Hello {
    public static void main(String[] args) {
        Device dev = Isthmus.get().device();
        float[] x = new float[1001];
        for (int i = 0; i < x.length; i++) x[i] = i;
        try (DeviceBuffer b = dev.fromArray(x, x.length); DeviceBuffer s = Ops.sum(b)) {
            System.out.println("sum " + s.toFloatArray()[0] + " on " + dev);
        }
    }
}
"""


def test_java_main_through_the_launcher(venv, outside, user_env):
    jar = _run([venv / "bin" / "python", "-c", "import isthmus.java.jvm as j; print(j.packaged_jar())"],
               cwd=outside, env=user_env).stdout.strip()
    src = outside / "hello"
    src.mkdir()
    (src / "Hello.java").write_text(HELLO)
    _run(["javac", "-d", src / "classes", "-cp", jar, src / "Hello.java"], cwd=outside)
    r = _run(["isthmus", "java", "-cp", src / "classes", "Hello"], cwd=outside, env=user_env, timeout=300)
    assert "sum 500500.0 on " in r.stdout, r.stdout


SUM_TEST = """
package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.isthmus.*;
import org.junit.jupiter.api.Test;

class SumTest {
    @Test
    void sumsOnTheRealRuntime() {
        assertTrue(Isthmus.isAttached());
        float[] x = new float[257];
        for (int i = 0; i < x.length; i++) x[i] = 2 * i + 1;
        try (DeviceBuffer b = Isthmus.get().device().fromArray(x, x.length); DeviceBuffer s = Ops.sum(b)) {
            assertEquals(257f * 257f, s.toFloatArray()[0]);
        }
    }
}
"""


def _local_repo_without_isthmus(dest: Path) -> Path:
    """A local Maven repository holding what the developer's one holds (plugins, JUnit; linked,
    not copied) except io.isthmus, so that only `isthmus maven-install` can provide the artifact."""
    seeded = maven.local_repository()
    dest.mkdir()
    for entry in seeded.iterdir() if seeded.is_dir() else ():
        if entry.name != "io":
            (dest / entry.name).symlink_to(entry)
    if (seeded / "io").is_dir():
        (dest / "io").mkdir()
        for entry in (seeded / "io").iterdir():
            if entry.name != "isthmus":
                (dest / "io" / entry.name).symlink_to(entry)
    return dest


def _maven_project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "pom.xml").write_text(_readme_block("xml", "<project"))
    test_dir = folder / "src" / "test" / "java" / "com" / "example"
    test_dir.mkdir(parents=True)
    (test_dir / "SumTest.java").write_text(SUM_TEST)
    return folder


def test_maven_project_on_the_installed_artifact(venv, outside, user_env):
    repo = _local_repo_without_isthmus(outside / "m2")
    env = {**user_env, "MAVEN_OPTS": ""}
    _run(["isthmus", "maven-install", "--repo", repo], cwd=outside, env=env)
    installed = repo / "io" / "isthmus" / "isthmus" / V
    assert {p.name for p in installed.iterdir()} >= {f"isthmus-{V}{s}" for s in
                                                     (".jar", ".pom", "-sources.jar", "-javadoc.jar")}
    home = Path(_run(["isthmus", "jvm-home", outside / "jvm"], cwd=outside, env=env).stdout.strip())
    project = _maven_project(outside / "app")
    mvn = ["mvn", "-o", "-B", "-ntp", f"-Dmaven.repo.local={repo}", f"-Disthmus.jvm.home={home}", "test"]
    r = _run(mvn, cwd=project, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stdout[-6000:]
    assert "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0" in r.stdout

    # the launcher's interpreter is gone: one line that says so reaches the user through Maven
    broken = outside / "jvm-broken"
    shutil.copytree(home, broken)
    script = broken / "bin" / "java"
    script.write_text(script.read_text().replace(str(venv / "bin"), str(outside / "gone" / "bin")))
    r = _run([*mvn[:-2], f"-Disthmus.jvm.home={broken}", "test"], cwd=project, env=env, timeout=600, check=False)
    assert r.returncode != 0
    said = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in (r.stdout + r.stderr).splitlines()
            if "no longer exists" in line]  # Maven colors the forked process's stderr
    assert said and re.fullmatch(r"isthmus: \S+/jvm-broken/bin/java runs \S+/gone/bin/python[0-9.]*, which no longer "
                                 r"exists; run `isthmus jvm-home` again with the Python that has isthmus installed",
                                 said[0]), (r.stdout + r.stderr)[-4000:]
