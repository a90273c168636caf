"""Where a benchmark's report goes (benchmarks/results/README.md describes the record):

- ``--out DIR``: ``DIR/<suite>-<backend>-<device>[-<tag>].{md,json}`` (any folder; none: print only);
- ``--run QUESTION``: the run answers a question: the report goes into
  ``benchmarks/results/runs/<today>-<QUESTION>/`` (with ``--tag`` in its name) and, as the newest result of its
  suite on that device, into ``benchmarks/results/latest/<suite>-<backend>-<device>.{md,json}``; the folder's
  ``RUN.md`` is started with the question, the command, the machine and the commit, for the verdict to be
  written by hand.
"""
from __future__ import annotations

import datetime as _dt
import re
import shutil
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
LATEST = RESULTS / "latest"
RUNS = RESULTS / "runs"
_QUESTION = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def add_run_option(parser) -> None:
    parser.add_argument("--run", metavar="QUESTION", default=None,
                        help="record the report in benchmarks/results: runs/<today>-QUESTION/ (a RUN.md is started "
                             "there) and latest/ (QUESTION: lower-case words joined by dashes, e.g. gemm512-opencl)")


def run_folder(question: str, date: str | None = None) -> Path:
    """``benchmarks/results/runs/<date>-<question>/`` (today's date in UTC by default), made if missing."""
    if not isinstance(question, str) or not _QUESTION.match(question):
        raise SystemExit(f"--run names the question a run answers in lower-case words joined by dashes "
                         f"(e.g. --run softmax-vocab-h200); got {question!r}")
    date = date or _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    folder = RUNS / f"{date}-{question}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write(report, out=None, tag: str = "", run: str | None = None) -> list[Path]:
    """Write ``report`` (an ``isthmus.measure.Report``) into ``out`` and, with ``run``, into its run folder and
    ``latest/`` (the untagged name: the newest result of the suite on that device); prints and returns the paths
    written, without extension."""
    written = [report.write(out, tag)] if out else []
    if run:
        folder = run_folder(run)
        written.append(report.write(folder, tag))
        written.append(report.write(LATEST))
        start_notes(folder, run, [written[-2]], report.command)
    for base in written:
        print(f"wrote {base}.md/.json")
    return written


def record_files(run: str, files: list[Path], command: str) -> None:
    """For a report another writer put into ``run_folder(run)`` (``isthmus bench``): copy each ``.md``/``.json``
    into ``latest/`` and note them in the folder's RUN.md."""
    folder = run_folder(run)
    LATEST.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copyfile(f, LATEST / f.name)
    start_notes(folder, run, sorted({f.with_suffix("") for f in files}), command)


def start_notes(folder: Path, question: str, bases: list[Path], command: str) -> Path:
    """Start ``folder/RUN.md`` (question, command, machine, commit, verdict to write) if it has none, and list
    the reports just written in it."""
    notes = folder / "RUN.md"
    if not notes.exists():
        from isthmus.measure import machine

        m = machine()
        notes.write_text("\n".join([
            f"# {question.replace('-', ' ')}", "",
            f"- **Question:** {question.replace('-', ' ')} (write it out as the question this run answers)",
            f"- **Command:** `{command}` (each report's header names its own)",
            f"- **Machine:** {m.get('host')}, {m.get('platform')}, {m.get('cpus')} CPUs, Python {m.get('python')}, "
            f"NumPy {m.get('numpy')} (each report's header names its devices and library versions)",
            f"- **Commit:** {_commit()}",
            "- **Verdict:** not written yet: write what the numbers answer, then add this folder's line to "
            "benchmarks/results/README.md", "", "## Files", ""]) + "\n")
    with notes.open("a") as f:
        for base in bases:
            f.write(f"- [`{base.name}.md`]({base.name}.md) and its `.json` twin: `{command}`\n")
    return notes


def _commit() -> str:
    """The checkout's commit, with a note when it has uncommitted changes; "not recorded" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS, capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "python", "opencl"],
                               cwd=RESULTS.parent.parent, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "not recorded (no git)"
    if head.returncode != 0:
        return "not recorded (not a git checkout)"
    return head.stdout.strip() + (" with uncommitted changes to python/ or opencl/" if dirty.stdout.strip() else "")
