"""The kernel library against PyOpenCL / CuPy RawKernel / cuBLAS / NumPy: what `isthmus bench` runs.

    python -m benchmarks library [--device ID] [--quick] [--out benchmarks/results/latest] [--run QUESTION]
    isthmus bench [--device ID] [--quick] [--out DIR]           # the same, from the installed package

Results: ``bench-<backend>-<device>[-quick].{md,json}`` (the suite is named ``bench`` after the command).
"""
from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from benchmarks import _results

SMOKE = ["--quick", "--out", "{out}"]


def main(argv=None) -> int:
    from isthmus.cli.bench import main as bench
    from isthmus.measure import command_line

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None, help="folder for the report (default: print only)")
    _results.add_run_option(p)
    a = p.parse_args(argv)
    if not a.run:
        return bench(a.device, quick=a.quick, out=a.out)
    # isthmus bench writes its own report: into the run folder, then copied to --out and latest/ and noted in RUN.md
    folder, start = _results.run_folder(a.run), time.time()
    rc = bench(a.device, quick=a.quick, out=str(folder))
    written = sorted(f for f in folder.glob("bench-*")
                     if f.suffix in (".md", ".json") and f.stat().st_mtime >= start - 1)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        for f in written:
            shutil.copyfile(f, Path(a.out) / f.name)
    _results.record_files(a.run, written, command_line())
    return rc
