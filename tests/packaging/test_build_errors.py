"""The wheel build's Java step says in one line what is missing (Maven, a JDK) instead of a
Maven or setuptools traceback; setup.py is imported here, not run."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def setup_py():
    spec = importlib.util.spec_from_file_location("isthmus_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tool(folder: Path, name: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/sh\nexit 0\n")
    (folder / name).chmod(0o755)


def test_without_maven_the_build_says_so_in_one_line(setup_py, tmp_path, monkeypatch):
    _tool(tmp_path / "bin", "javac")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(setup_py.JavaBuildError) as info:
        setup_py.build_java(tmp_path / "out")
    message = str(info.value)
    assert "\n" not in message and "Maven (mvn) is not on PATH" in message and "apt-get install maven" in message
    assert not (tmp_path / "out").exists()


def test_without_a_jdk_the_build_says_so_in_one_line(setup_py, tmp_path, monkeypatch):
    _tool(tmp_path / "bin", "mvn")
    _tool(tmp_path / "bin", "java")  # a JRE: java but no javac
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(setup_py.JavaBuildError, match=r"^isthmus: a JDK 17\+ is needed .*javac is not on PATH[^\n]*$"):
        setup_py.build_java(tmp_path / "out")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))
    with pytest.raises(setup_py.JavaBuildError, match=f"JAVA_HOME={tmp_path / 'jre'} has no bin/javac"):
        setup_py.build_java(tmp_path / "out")


def test_versions_of_package_and_pom_agree(setup_py):
    from isthmus import __version__

    assert setup_py._version() == setup_py._pom_version() == __version__
    assert os.path.basename(setup_py.HERE) == REPO.name
