"""Start-up cost: ``python -c "import isthmus"`` against ``python -c "import numpy, pyopencl"`` (what
importing the OpenCL backend alone costs), each the median wall time of fresh processes.

    python -m benchmarks import_time [--runs N] [--out DIR] [--run QUESTION]

The two commands alternate (one round: one process of each), so a machine whose load changes
during the run loads both alike. Also reported: a bare interpreter (``python -c pass``) and
``import isthmus`` followed by the first device lookup (``isthmus.device()``: the backend's import
and its platform query), which is where the backend's cost is paid.

Every command is timed from bytecode, as an installed wheel runs (pip compiles at install): each
is run once first with the bytecode written to a private cache (PYTHONPYCACHEPREFIX, a temporary
folder: nothing is written into the checkout or site-packages), and the timed runs read it. A
checkout run with PYTHONDONTWRITEBYTECODE set (this machine's default) would otherwise compile
isthmus's sources in every process while NumPy and PyOpenCL load their installed bytecode.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
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


def _once(code: str, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _bytecode_env(cache: str) -> dict:
    """The environment of the timed processes: bytecode read from (and first written to) ``cache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    for code in COMMANDS.values():
        _once(code, env)  # writes every imported module's bytecode into the cache
    return env


def run(runs: int) -> list[dict]:
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="isthmus-pycache-") as cache:
        env = _bytecode_env(cache)
        for _ in range(runs):
            for name, code in COMMANDS.items():
                times[name].append(_once(code, env))
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
    rows = run(a.runs)
    import isthmus

    ours = next(r for r in rows if r["command"] == 'python -c "import isthmus"')
    report = measure.Report("import_time", "import isthmus against importing its OpenCL backend", isthmus.device(),
                            data={"rows": rows},
                            notes=[f"{a.runs} fresh processes per command, alternating; median wall time",
                                   "every command from bytecode, as installed packages run: each run once first with "
                                   "its bytecode written to a private PYTHONPYCACHEPREFIX, which the timed runs read",
                                   f"import isthmus / import numpy, pyopencl: {ours['x_numpy_pyopencl']:.2f}x "
                                   f"(target <= 1: {'met' if ours['x_numpy_pyopencl'] <= 1 else 'NOT met'})"])
    report.add_records(rows, ["command", "median_ms", "min_ms", "max_ms", "x_numpy_pyopencl"])
    print(report.markdown())
    _results.write(report, a.out, a.tag, a.run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
