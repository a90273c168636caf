"""isthmus.ops.docs: opencl/README.md's per-kernel part and the typed stub ops/__init__.pyi are
what the specs give (run `python -m isthmus.ops.docs opencl/README.md` after changing a spec), and
the README's own calls type-check against the shipped stub under `mypy --strict`."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import isthmus
from isthmus.ops import docs, registry

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "opencl" / "README.md"


def test_opencl_readme_and_the_ops_stub_are_written_from_the_specs():
    text = README.read_text()
    assert docs.render(text) == text, "opencl/README.md is out of date: run python -m isthmus.ops.docs opencl/README.md"
    assert docs.STUB.read_text() == docs.stub(), "ops/__init__.pyi is out of date: run python -m isthmus.ops.docs"
    for name, spec in registry.OPS.items():
        assert f"def {docs._wrapped(docs.signature(spec))}:" in docs.STUB.read_text() and f"isthmus.ops.{name}(" in text
    for name in registry._shipped:
        spec = registry.get(name)
        assert f"## {spec.source}: {name}" in text
        for t in spec.tunables:
            assert f"| {t.name} | {', '.join(map(str, t.values))} | {t.default} |" in text


def test_check_mode_fails_on_a_stale_readme(tmp_path, capsys):
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text().replace("| WG | 64, 128, 256, 512, 1024 | 256 |", "| WG | 64 | 64 |", 1))
    assert docs.main(["--check", str(stale)]) == 1 and "out of date" in capsys.readouterr().err
    assert docs.main([str(stale)]) == 0 and docs.main(["--check", str(stale)]) == 0


def test_check_mode_fails_on_a_stale_stub(tmp_path, monkeypatch, capsys):
    stub = tmp_path / "__init__.pyi"
    stub.write_text(docs.stub().replace("def scale(alpha: float,", "def scale(alpha: int,"))
    monkeypatch.setattr(docs, "STUB", stub)
    assert docs.main(["--check", str(README)]) == 1 and "__init__.pyi" in capsys.readouterr().err
    assert docs.main([str(README)]) == 0 and stub.read_text() == docs.stub()


def _readme_python() -> str:
    """The Python blocks of the project README that need neither Java nor Ray, as one program."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return "".join(b for b in blocks if "isthmus.java" not in b and "isthmus.ray" not in b)


def test_the_readmes_calls_type_check_under_mypy_strict(tmp_path):
    """`isthmus.ops.softmax(x)`, `isthmus.tune(...)`, `dev.asarray(...)`: what the README shows a
    user passes `mypy --strict` against the installed package's stub and annotations."""
    pytest.importorskip("mypy")
    program = _readme_python()
    assert "isthmus.ops.axpy(" in program and "isthmus.tune(" in program
    (tmp_path / "readme_calls.py").write_text(program)
    package = Path(isthmus.__file__).resolve().parents[1]  # (an editable install: mypy reads no import hook)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                        "readme_calls.py"], cwd=tmp_path, env={"MYPYPATH": str(package), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "bad.py"
    bad.write_text(program + "isthmus.ops.softmax(x, out=3)\nisthmus.ops.scale('2', x)\n")
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                        "bad.py"], cwd=tmp_path, env={"MYPYPATH": str(package), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 1 and r.stdout.count("[arg-type]") == 2, r.stdout  # the stub's types are checked
