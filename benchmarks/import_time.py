"""Start-up cost: ``python -c "import isthmus"`` against ``python -c "import numpy, pyopencl"`` (what
importing the OpenCL backend alone costs), each the median wall time of fresh processes.

    python -m benchmarks import_time [--runs N] [--out DIR] [--run QUESTION]

The two commands alternate (one round: one process of each), so a machine whose load changes
during the run loads both alike. Also reported: a bare interpreter (``python -c pass``) and
``import isthmus`` followed by the first device lookup (``isthmus.device()``: the backend's import
and its platform query), which is where the backend's cost is paid.

isthmus is byte-compiled first (``compileall`` of its package, as ``pip install`` does for a wheel):
NumPy and PyOpenCL are timed from their installed bytecode, and a checkout run with
PYTHONDONTWRITEBYTECODE set (this machine's default) would otherwise compile isthmus's sources in
every process.
"""
from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time

from benchmarks import _results
from isthmus import measure

SMOKE = ["--runs", "3", "--out", "{out}"]
COMMANDS = {
    "python -c pass": "pass",
    "import numpy, pyopencl": "import numpy, pyopencl",
    "import isthmus": "import isthmus",
    "import isthmus; isthmus.device()": "import isthmus; isthmus.device()",
}


def _once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _byte_compile() -> str:
    """Byte-compile the isthmus that ``python -c "import isthmus"`` imports, as an installed wheel is."""
    where = subprocess.run([sys.executable, "-c", "import isthmus, os; print(os.path.dirname(isthmus.__file__))"],
                           check=True, capture_output=True, text=True).stdout.strip()
    compileall.compile_dir(where, quiet=1)
    return where


def run(runs: int) -> list[dict]:
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, code in COMMANDS.items():
            times[name].append(_once(code))
    base = statistics.median(times["import numpy, pyopencl"])
    return [{"command": f'python -c "{name}"' if name != "python -c pass" else name,
             "median_ms": statistics.median(t) * 1e3, "min_ms": min(t) * 1e3, "max_ms": max(t) * 1e3,
             "x_numpy_pyopencl": statistics.median(t) / base} for name, t in times.items()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="fresh processes per command (default 15)")
    ap.add_argument("--out", default=None, help="folder for import_time-<backend>-<device>.md/.json")
    _results.add_run_option(ap)
    ap.add_argument("--tag", default="", help="suffix of the result file names")
    a = ap.parse_args(argv)
    compiled = _byte_compile()
    rows = run(a.runs)
    import isthmus

    ours = next(r for r in rows if r["command"] == 'python -c "import isthmus"')
    report = measure.Report("import_time", "import isthmus against importing its OpenCL backend", isthmus.device(),
                            data={"rows": rows},
                            notes=[f"{a.runs} fresh processes per command, alternating; median wall time",
                                   f"isthmus byte-compiled first (compileall of {os.path.basename(compiled)}/, as pip "
                                   f"install does for a wheel), like the installed NumPy and PyOpenCL",
                                   f"import isthmus / import numpy, pyopencl: {ours['x_numpy_pyopencl']:.2f}x "
                                   f"(target <= 1: {'met' if ours['x_numpy_pyopencl'] <= 1 else 'NOT met'})"])
    report.add_records(rows, ["command", "median_ms", "min_ms", "max_ms", "x_numpy_pyopencl"])
    print(report.markdown())
    _results.write(report, a.out, a.tag, a.run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
