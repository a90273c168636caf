"""The kernel library against PyOpenCL / CuPy RawKernel / cuBLAS / NumPy: what `isthmus bench` runs.

    python -m benchmarks library [--device ID] [--quick] [--out benchmarks/results]
    isthmus bench [--device ID] [--quick] [--out DIR]           # the same, from the installed package

Results: ``bench-<backend>-<device>[-quick].{md,json}`` (the suite is named ``bench`` after the command).
"""
from __future__ import annotations

import argparse

SMOKE = ["--quick", "--out", "{out}"]


def main(argv=None) -> int:
    from isthmus.bench import main as bench

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None, help="folder for the report (default: print only)")
    a = p.parse_args(argv)
    return bench(a.device, quick=a.quick, out=a.out)


if __name__ == "__main__":
    raise SystemExit(main())
