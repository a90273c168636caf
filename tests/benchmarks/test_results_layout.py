"""benchmarks/results/ is a record a reader can navigate (benchmarks/results/README.md): every file is the index
README.md, a newest report in latest/, part of a run folder runs/<date>-<question>/ that has its RUN.md and a line in
the index, or a pytest log in logs/; and every results path the docs and sources name exists."""
from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
RUN_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9]+(-[a-z0-9]+)*$")
FIELDS = ("question", "command", "machine", "commit", "verdict")
# where results are named: the docs, and the sources whose comments cite a measurement
DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", ROOT / "opencl" / "README.md", RESULTS / "README.md",
        *sorted((ROOT / "docs").rglob("*.md"))]
SOURCES = [*sorted((ROOT / "python").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("**/*.py")),
           *sorted((ROOT / "benchmarks").glob("*.sh")), *sorted((ROOT / "java" / "src").rglob("*.java")),
           *sorted((ROOT / "tests").rglob("*.py")), ROOT / "Makefile"]
NAMED = re.compile(r"benchmarks/results(?:/[^\s`'\")\]|<>]*)?")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def run_folders() -> list[Path]:
    runs = RESULTS / "runs"
    return sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []


def test_every_file_has_its_place():
    misplaced = []
    for f in sorted(p for p in RESULTS.rglob("*") if p.is_file()):
        rel = f.relative_to(RESULTS)
        top = rel.parts[0]
        if rel == Path("README.md"):
            continue
        if (top == "latest" and len(rel.parts) == 2) or (top == "logs" and len(rel.parts) >= 2):
            continue
        if top == "runs" and len(rel.parts) >= 3 and RUN_NAME.match(rel.parts[1]):
            continue
        misplaced.append(str(rel))
    assert not misplaced, (f"files outside README.md, latest/, runs/<YYYY-MM-DD>-<question>/ and logs/: {misplaced}; "
                           "move each into the run folder of the question it answers (benchmarks/results/README.md)")


def test_latest_holds_report_pairs():
    latest = RESULTS / "latest"
    names = {p.name for p in latest.iterdir()} if latest.is_dir() else set()
    lonely = sorted(n for n in names if n.endswith((".md", ".json"))
                    and f"{n.rsplit('.', 1)[0]}.{'json' if n.endswith('.md') else 'md'}" not in names)
    other = sorted(n for n in names if not n.endswith((".md", ".json")))
    assert not lonely and not other, f"latest/ holds reports as .md with their .json twins; alone: {lonely}, other: {other}"


@pytest.mark.parametrize("folder", run_folders(), ids=lambda p: p.name)
def test_run_folder_has_notes_and_a_line_in_the_index(folder):
    notes = folder / "RUN.md"
    assert notes.is_file(), f"{folder.name} has no RUN.md (question, command, machine, commit, verdict)"
    text = notes.read_text().lower()
    missing = [f for f in FIELDS if f not in text]
    assert not missing, f"{folder.name}/RUN.md does not say its {', '.join(missing)}"
    assert f"runs/{folder.name}/" in (RESULTS / "README.md").read_text(), (
        f"benchmarks/results/README.md has no line for runs/{folder.name}/ (date, question, verdict, link)")
    assert len([p for p in folder.rglob("*") if p.is_file()]) > 1, f"{folder.name} holds its RUN.md only, no data"


def _exists(path: Path) -> bool:
    text = str(path)
    braces = re.search(r"\{([^{}]*)\}", text)
    if braces:  # name{,-2,-3}.md: every alternative
        return all(_exists(Path(text[:braces.start()] + alt + text[braces.end():])) for alt in braces.group(1).split(","))
    if any(c in text for c in "*?["):
        return bool(glob.glob(text))
    return path.exists()


def _named_paths():
    for f in DOCS + SOURCES:
        if not f.is_file():
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for m in NAMED.finditer(line):
                path = m.group(0).rstrip(".,:;")
                if "$" in path or "<" in line[m.end():m.end() + 1]:  # a template (benchmarks/results/runs/<date>-...)
                    continue
                yield f, n, ROOT / path
    for f in [RESULTS / "README.md", *sorted(RESULTS.glob("runs/*/RUN.md"))]:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in LINK.finditer(line):
                if "://" not in m.group(1) and not m.group(1).startswith("#"):
                    yield f, n, f.parent / m.group(1)


def test_every_results_path_named_exists():
    broken = [f"{f.relative_to(ROOT)}:{n}: {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}"
              for f, n, p in _named_paths() if not _exists(p)]
    assert not broken, "results paths named but missing (moved? see benchmarks/results/README.md):\n" + "\n".join(broken)
