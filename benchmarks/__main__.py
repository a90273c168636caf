"""``python -m benchmarks NAME [ARGS]``: run one module of the suite; ``--list``: what there is.

Run from the repository root (the ``benchmarks`` package is the checkout's folder, not part of the
installed isthmus), e.g. ``python -m benchmarks shapes --device cuda:0 --out benchmarks/results``.
"""
from __future__ import annotations

import sys

from benchmarks import load, modules


def listing() -> str:
    lines = []
    for name, (kind, path) in sorted(modules().items(), key=lambda item: (item[1][0], item[0])):
        doc = (load(name).__doc__ or "").strip().splitlines()
        lines.append(f"{kind:<11} {name:<18} {doc[0] if doc else ''}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--list", "list"):
        print(__doc__.strip() + "\n\n" + listing())
        return 0
    return load(argv[0]).main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
