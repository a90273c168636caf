"""The kernel library against PyOpenCL / CuPy RawKernel / cuBLAS / NumPy: what `isthmus bench` runs.

    python benchmarks/library.py [--device ID] [--quick] [--out benchmarks/results]
"""
import argparse
import sys

from isthmus.bench import main

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default="benchmarks/results")
    a = p.parse_args()
    sys.exit(main(a.device, quick=a.quick, out=a.out))
