"""Java without the repository, piece by piece: where `isthmus maven-install` writes and what,
the Java home of `isthmus jvm-home` (its bin/java run for real, with a stand-in interpreter), and
where the hosted JVM's io.isthmus classes come from (the package's jar, else -cp/ISTHMUS_CLASSPATH;
one typed error otherwise). tests/packaging runs the whole path from an installed wheel."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from isthmus import __version__ as V
from isthmus.errors import BackendUnavailableError
from isthmus.cli.java import maven_install
from isthmus.java import jvm, jvm_home, maven

from _hosted_support import java_homes


# ---- maven-install ---------------------------------------------------------------------------
def test_local_repository_follows_mavens_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MAVEN_OPTS", raising=False)
    assert maven.local_repository() == tmp_path / ".m2" / "repository"
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text(
        '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">'
        "<localRepository>${user.home}/repo-from-settings</localRepository></settings>")
    assert maven.local_repository() == tmp_path / "repo-from-settings"
    monkeypatch.setenv("MAVEN_OPTS", f"-Xmx1g -Dmaven.repo.local={tmp_path}/from-opts -Dx=y")
    assert maven.local_repository() == tmp_path / "from-opts"
    assert maven.local_repository(tmp_path / "explicit") == tmp_path / "explicit"
    (tmp_path / ".m2" / "settings.xml").write_text("<settings><not-closed>")  # broken: Maven's default then
    monkeypatch.delenv("MAVEN_OPTS")
    assert maven.local_repository() == tmp_path / ".m2" / "repository"


def _fake_artifact(lib: Path) -> dict:
    lib.mkdir(parents=True, exist_ok=True)
    contents = {}
    for suffix in maven.SUFFIXES:
        data = f"{suffix} of {V}".encode()
        (lib / f"isthmus-{V}{suffix}").write_bytes(data)
        contents[suffix] = data
    return contents


def test_maven_install_writes_the_repository_layout(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # where it records this Python (isthmus.java.hosted)
    contents = _fake_artifact(tmp_path / "lib")
    monkeypatch.setattr(jvm, "_LIB", tmp_path / "lib")
    repo = tmp_path / "repo"
    meta = repo / "io" / "isthmus" / "isthmus" / "maven-metadata-local.xml"
    meta.parent.mkdir(parents=True)
    meta.write_text("<metadata><versioning><versions><version>0.0.9</version></versions></versioning></metadata>")
    assert maven_install(["--repo", str(repo)]) == 0
    folder = repo / "io" / "isthmus" / "isthmus" / V
    for suffix, data in contents.items():
        if suffix != ".pom":  # the pom gains the dependency on JPype's support jar (tests/java/test_hosted.py)
            assert (folder / f"isthmus-{V}{suffix}").read_bytes() == data
    text = meta.read_text()
    assert f"<version>{V}</version>" in text and "<version>0.0.9</version>" in text  # earlier installs kept
    assert f"<release>{V}</release>" in text
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_maven_install_without_an_artifact_is_one_typed_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(jvm, "_LIB", tmp_path / "empty")
    with pytest.raises(BackendUnavailableError, match="install isthmus from a wheel"):
        maven.artifact_files()
    assert maven_install(["--repo", str(tmp_path / "repo")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BackendUnavailableError" in err
    assert not (tmp_path / "repo").exists()  # nothing half-installed


# ---- jvm-home --------------------------------------------------------------------------------
def _stand_in_python(path: Path) -> Path:
    """An 'interpreter' that reports how bin/java called it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\necho "JAVA_HOME=${JAVA_HOME:-<unset>}"\nfor a in "$@"; do echo "arg=$a"; done\n')
    path.chmod(0o755)
    return path


def test_jvm_home_java_runs_isthmus_java_with_its_interpreter(tmp_path):
    py = _stand_in_python(tmp_path / "env with space" / "bin" / "python")
    home = jvm_home.create(tmp_path / "jvm", python=str(py))
    java = home / "bin" / "java"
    assert os.access(java, os.X_OK) and 'JAVA_VERSION="' in (home / "release").read_text()
    r = subprocess.run([str(java), "-Xmx1g", "-jar", "booter.jar", "a b"], capture_output=True, text=True,
                       env={**os.environ, "JAVA_HOME": "/somewhere/else"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["JAVA_HOME=/somewhere/else", "arg=-m", "arg=isthmus.java", "arg=-Xmx1g",
                                     "arg=-jar", "arg=booter.jar", "arg=a b"]


def test_jvm_home_puts_back_a_real_jdk_when_surefire_points_java_home_at_it(tmp_path, monkeypatch):
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "release").write_text('JAVA_VERSION="21.0.2"\n')
    monkeypatch.setattr(jvm_home, "jdk_home", lambda: jdk)
    home = jvm_home.create(tmp_path / "jvm", python=str(_stand_in_python(tmp_path / "py")))
    assert 'JAVA_VERSION="21.0.2"' in (home / "release").read_text()  # what surefire reads
    r = subprocess.run([str(home / "bin" / "java")], capture_output=True, text=True,
                       env={**os.environ, "JAVA_HOME": str(home)})  # what surefire does to the fork
    assert r.stdout.splitlines()[0] == f"JAVA_HOME={jdk}"
    jdk.rename(tmp_path / "jdk-removed")  # that JDK is gone: unset, JPype looks for one itself
    r = subprocess.run([str(home / "bin" / "java")], capture_output=True, text=True,
                       env={**os.environ, "JAVA_HOME": str(home)})
    assert r.stdout.splitlines()[0] == "JAVA_HOME=<unset>"


def test_jvm_home_with_its_interpreter_gone_says_so_in_one_line(tmp_path):
    home = jvm_home.create(tmp_path / "jvm", python=str(tmp_path / "deleted-env" / "bin" / "python"))
    r = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True)
    assert r.returncode == 127 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "deleted-env/bin/python, which no longer exists" in r.stderr
    assert "isthmus jvm-home" in r.stderr


def test_jvm_home_cli_prints_only_the_folder(tmp_path):
    r = subprocess.run([sys.executable, "-m", "isthmus", "jvm-home", str(tmp_path / "j")], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stdout == f"{tmp_path / 'j'}\n"  # usable as $(isthmus jvm-home)
    assert sys.executable in (tmp_path / "j" / "bin" / "java").read_text()


# ---- the hosted JVM's classpath --------------------------------------------------------------
def _jar_with_isthmus(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("io/isthmus/Isthmus.class", b"\xca\xfe\xba\xbe")
    return path


def test_classpath_takes_the_packaged_jar_of_this_version(tmp_path, monkeypatch):
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in (f"isthmus-{V}.jar", f"isthmus-{V}-sources.jar", f"isthmus-{V}-javadoc.jar", "isthmus-0.0.1.jar"):
        (lib / name).write_bytes(b"")
    monkeypatch.setattr(jvm, "_LIB", lib)
    monkeypatch.delenv("ISTHMUS_CLASSPATH", raising=False)
    assert jvm.classpath(["app.jar"]) == [str(lib / f"isthmus-{V}.jar"), "app.jar"]


def test_without_a_packaged_jar_cp_or_isthmus_classpath_must_hold_io_isthmus(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm, "_LIB", tmp_path / "no-lib")
    monkeypatch.delenv("ISTHMUS_CLASSPATH", raising=False)
    jar = _jar_with_isthmus(tmp_path / "isthmus.jar")
    classes = tmp_path / "classes"
    (classes / "io" / "isthmus").mkdir(parents=True)
    (classes / "io" / "isthmus" / "Isthmus.class").write_bytes(b"")
    assert jvm.classpath([str(jar), "app.jar"]) == [str(jar), "app.jar"]
    assert jvm.classpath(f"app.jar{os.pathsep}{classes}") == ["app.jar", str(classes)]
    monkeypatch.setenv("ISTHMUS_CLASSPATH", str(jar))
    assert jvm.classpath(["app.jar"]) == [str(jar), "app.jar"]
    monkeypatch.delenv("ISTHMUS_CLASSPATH")
    (tmp_path / "not-a-jar.jar").write_text("text")
    with pytest.raises(BackendUnavailableError, match="-cp / ISTHMUS_CLASSPATH"):
        jvm.classpath(["app.jar", str(tmp_path / "not-a-jar.jar"), str(tmp_path / "missing.jar")])


def test_launcher_without_the_jar_says_so_in_one_line(tmp_path):
    code = ("import sys, pathlib; import isthmus.java.jvm as j; j._LIB = pathlib.Path(sys.argv[1])\n"
            "from isthmus.java.launcher import main; sys.exit(main(['-cp', sys.argv[1], 'Hello']))")
    env = {k: v for k, v in os.environ.items() if k != "ISTHMUS_CLASSPATH"}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("isthmus java: BackendUnavailableError: the isthmus Java classes are missing")


def _libjvm(home: Path) -> Path | None:
    return next((p for p in (home / "lib" / "server" / "libjvm.so", home / "lib" / "server" / "libjvm.dylib")
                 if p.is_file()), None)


@pytest.mark.skipif(jvm.packaged_jar() is None, reason="needs the packaged jar (make jar)")
@pytest.mark.parametrize("home", [h for _, h in java_homes()], ids=lambda h: h.name)
def test_isthmus_java_prints_only_the_applications_output_on_every_jdk(tmp_path, home):
    """`isthmus java` on each JDK here (17 and 22+): JPype loads its native library with System.load, a
    restricted method that JDK 24+ reports in four WARNING lines unless the JVM grants native access: the
    launcher grants it, so an application's stderr holds only what the application wrote."""
    lib = _libjvm(home)
    if lib is None:
        pytest.skip(f"{home} has no libjvm")
    env = {**os.environ, "ISTHMUS_JVM": str(lib)}
    r = subprocess.run([sys.executable, "-m", "isthmus", "java", "io.isthmus.llm.Generate", "--model",
                        str(tmp_path / "absent"), "--prompt-ids", "1"], capture_output=True, text=True,
                       timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == [f"Generate: --model {tmp_path / 'absent'} is not a folder "
                                     "(a Hugging Face model folder: config.json and safetensors)"], r.stderr


# ---- jvm-home's bin/java as tools probe it ---------------------------------------------------
@pytest.mark.parametrize("probe", [["-version"], ["--version"], ["-fullversion"], ["--full-version"],
                                   ["-XshowSettings:properties", "-version"], ["-XshowSettings:vm", "-version"],
                                   ["-Xmx64m", "-version"], ["-version", "some.Main"]])
def test_jvm_home_java_answers_probes_as_the_hosted_jdk_does(tmp_path, probe):
    jdk = jvm_home.jdk_home()
    if jdk is None or not (jdk / "bin" / "java").is_file():
        pytest.skip("needs the JDK JPype hosts, with its bin/java")
    home = jvm_home.create(tmp_path / "jvm")
    r = subprocess.run([str(home / "bin" / "java"), *probe], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "JAVA_HOME": str(home)})  # as surefire and toolchains call it
    real = subprocess.run([str(jdk / "bin" / "java"), *probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == real.returncode == 0, r.stderr
    assert (r.stdout, r.stderr) == (real.stdout, real.stderr)
    assert "openjdk" in (r.stdout + r.stderr).lower() or "java" in (r.stdout + r.stderr).lower()


def test_jvm_home_java_without_a_main_class_is_javas_usage_error(tmp_path):
    home = jvm_home.create(tmp_path / "jvm")
    r = subprocess.run([str(home / "bin" / "java"), "-Xmx64m"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "usage: isthmus java" in r.stderr


def test_not_attached_names_isthmus_jvm_home(tmp_path):
    """A JVM not started by isthmus (plain `java` with the jar) gets the typed error that says how."""
    src = tmp_path / "Probe.java"
    src.write_text("public class Probe { public static void main(String[] a) {"
                   " try { io.isthmus.Isthmus.get(); } catch (io.isthmus.NotAttachedException e) {"
                   " System.out.println(e.getMessage()); } } }")
    jar = jvm.packaged_jar()
    jdk = jvm_home.jdk_home()
    if jar is None or jdk is None:
        pytest.skip("needs the packaged jar (make jar) and a JDK")
    # no Python named or recorded (a home of its own): on JDK 22+ the JVM would otherwise boot the runtime
    env = {k: v for k, v in os.environ.items() if k not in ("ISTHMUS_PYTHON", "JAVA_TOOL_OPTIONS")}
    env["HOME"] = str(tmp_path)
    r = subprocess.run([str(jdk / "bin" / "java"), "-cp", str(jar), str(src)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "isthmus jvm-home" in r.stdout and "isthmus java" in r.stdout
    assert "examples/" not in r.stdout
