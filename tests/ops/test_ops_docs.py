"""isthmus.ops.docs: opencl/README.md's per-kernel part is what the specs give (run
`python -m isthmus.ops.docs opencl/README.md` after changing a spec)."""
from pathlib import Path

from isthmus.ops import docs, registry

README = Path(__file__).resolve().parents[2] / "opencl" / "README.md"


def test_opencl_readme_is_written_from_the_specs():
    text = README.read_text()
    assert docs.render(text) == text, "opencl/README.md is out of date: run python -m isthmus.ops.docs opencl/README.md"
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
