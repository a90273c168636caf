"""``python -m benchmarks NAME [ARGS]``: run one module of the suite; ``--list``: what there is;
``--smoke OUT [NAME...]``: every module's quick run (its ``SMOKE`` arguments) in this one process,
each writing into OUT/NAME/ with its output in OUT/NAME/log.txt, and a summary in OUT/smoke.json
(what tests/benchmarks checks; one process, so the start-up is paid once).

Run from the repository root (the ``benchmarks`` package is the checkout's folder, not part of the
installed isthmus), e.g. ``python -m benchmarks shapes --device cuda:0 --out benchmarks/results/latest``.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
from pathlib import Path

from benchmarks import load, modules


def listing() -> str:
    lines = []
    for name, (kind, path) in sorted(modules().items(), key=lambda item: (item[1][0], item[0])):
        doc = (load(name).__doc__ or "").strip().splitlines()
        lines.append(f"{kind:<11} {name:<18} {doc[0] if doc else ''}")
    return "\n".join(lines)


def smoke(out: Path, names: list[str]) -> int:
    """Each module's SMOKE run ("{out}": its folder, "{device}": ISTHMUS_DEVICE or the default
    device); returns how many failed."""
    import isthmus

    device = isthmus.device().id  # ISTHMUS_DEVICE, else the best available
    summary = {}
    for name in names or sorted(modules()):
        args = load(name).SMOKE
        if isinstance(args, str):
            summary[name] = {"skipped": args}
            continue
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        argv = [a.replace("{out}", str(folder)).replace("{device}", device) for a in args]
        t0 = time.monotonic()
        with open(folder / "log.txt", "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            try:
                rc, error = load(name).main(argv) or 0, ""
            except BaseException:  # noqa: BLE001 - SystemExit too: one module failing must not hide the others
                rc, error = 1, traceback.format_exc()
        summary[name] = {"argv": argv, "rc": rc, "error": error, "seconds": round(time.monotonic() - t0, 1)}
        print(f"{name}: rc {rc} in {summary[name]['seconds']} s", flush=True)
    (out / "smoke.json").write_text(json.dumps(summary, indent=1) + "\n")
    return sum(1 for s in summary.values() if s.get("rc"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--list", "list"):
        print(__doc__.strip() + "\n\n" + listing())
        return 0
    if argv[0] == "--smoke":
        if len(argv) < 2:
            raise SystemExit("--smoke needs a folder for the results: python -m benchmarks --smoke OUT [NAME...]")
        return 1 if smoke(Path(argv[1]), argv[2:]) else 0
    return load(argv[0]).main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
