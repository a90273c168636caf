"""The benchmark suite of isthmus: ``python -m benchmarks NAME [ARGS]`` (``--list`` names them).

Three kinds of module, each with ``main(argv) -> int`` and ``SMOKE`` (the arguments of a quick run
on PoCL for tests/benchmarks, or a string saying why there is none):

- benchmarks (``benchmarks/NAME.py``): isthmus next to a peer (PyOpenCL, CuPy, cuBLAS/torch,
  CLBlast, NumPy, Ray, the exhaustive search) in one run, timed with ``isthmus.measure``,
  written with its report writer (``<suite>-<backend>-<device>.{md,json}``, see README.md);
- diagnostics (``benchmarks/diagnostics/NAME.py``): scripts that explain a cost (profiles,
  host-wait probes, launch-path comparisons) rather than compare with a peer;
- tools (``benchmarks/tools/NAME.py``): maintenance of the shipped tuning configs.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

KINDS = {"benchmark": "", "diagnostic": "diagnostics.", "tool": "tools."}


def modules() -> dict[str, tuple[str, str]]:
    """name -> (kind, module path) of every runnable module of the suite."""
    here = Path(__file__).parent
    found = {}
    for kind, prefix in KINDS.items():
        folder = here / prefix.rstrip(".") if prefix else here
        for info in pkgutil.iter_modules([str(folder)]):
            if not info.ispkg and not info.name.startswith("_"):
                found[info.name] = (kind, f"{__name__}.{prefix}{info.name}")
    return found


def load(name: str):
    """The module of benchmark, diagnostic or tool ``name`` (``shapes``, ``profile_ops``, ...)."""
    found = modules()
    short = name.rsplit(".", 1)[-1]
    if short not in found:
        raise SystemExit(f"no benchmark, diagnostic or tool named {name!r}; "
                         f"one of: {', '.join(sorted(found))} (python -m benchmarks --list)")
    return importlib.import_module(found[short][1])
