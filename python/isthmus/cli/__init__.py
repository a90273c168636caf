"""``isthmus devices | demo | bench | tune | db | java | maven-install | jvm-home`` (also ``python -m isthmus``
and ``python -m isthmus.cli``): the verbs with their own options live in this package, one module
per concern (:mod:`.tune`, :mod:`.db`, :mod:`.java`); the JVM launcher's options are java's own
(:mod:`isthmus.java.launcher`)."""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from .. import __version__
from ..device import _problems, devices
from ..errors import IsthmusError


def _devices(args) -> int:
    found = devices()
    if args.json:
        print(json.dumps([d.info() for d in found], indent=2))
        return 0
    from rich.console import Console
    from rich.markup import escape

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(devices_table(found))
    for name, why in sorted(_problems.items()):
        console.print(f"[dim]{escape(name)}: {escape(why)}[/dim]")
    return 0 if found else 1


def devices_table(found):
    """The devices as a rich table. The id (what users copy into ``--device`` and ISTHMUS_DEVICE)
    is never cut or wrapped; every other cell folds onto more lines in a narrow terminal, never
    ending in an ellipsis."""
    from rich.table import Table

    table = Table(title="isthmus devices")
    ids = [d.id for d in found]
    table.add_column("id", no_wrap=True, min_width=max(map(len, ids), default=2))
    for col in ("name", "vendor", "kind", "memory", "CUs", "max WG", "driver", "dtypes"):  # (never 0 wide: min_width)
        table.add_column(col, overflow="fold", min_width=3,
                         justify="right" if col in ("memory", "CUs", "max WG") else "left")
    for d in found:
        table.add_row(d.id, d.name, d.vendor, d.kind, f"{d.memory / 2**30:.1f} GiB", str(d.compute_units),
                      str(d.max_work_group_size), d.driver_version, " ".join(d.dtypes))
    return table


def _demo(args) -> int:
    from .demo import main as demo

    return demo(args.device)


def _bench(args) -> int:
    from .bench import main as bench

    return bench(args.device, quick=args.quick, out=args.out)


# Verbs whose arguments belong to another parser (the JVM launcher, the tuner, ...) are forwarded whole.
FORWARDED = {
    "java": ("isthmus.java.launcher", "run a Java main class or jar with the runtime attached (java's options)"),
    "tune": ("isthmus.cli.tune", "tune a library kernel on a device"),
    "db": ("isthmus.cli.db", "show/export/import/clear the tuning database"),
    "maven-install": ("isthmus.cli.java:maven_install", "install the Java artifact io.isthmus:isthmus into the local "
                                                        "Maven repository"),
    "jvm-home": ("isthmus.cli.java:jvm_home", "create a Java home whose bin/java runs `isthmus java` (surefire's <jvm>)"),
}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="isthmus", description="GPU kernels written once in OpenCL C, for Python "
                                     "and Java")
    parser.add_argument("--version", action="version", version=f"isthmus {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND")
    p = sub.add_parser("devices", help="list every device of every backend")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=_devices)
    p = sub.add_parser("demo", help="run every library kernel on a device, checked against NumPy")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    p.set_defaults(run=_demo)
    p = sub.add_parser("bench", help="benchmark the library against PyOpenCL, CuPy and NumPy")
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    p.add_argument("--out", default=".", metavar="DIR",
                   help="folder for the JSON and markdown results (default: the current folder)")
    p.set_defaults(run=_bench)
    for verb, (_, help_) in FORWARDED.items():
        sub.add_parser(verb, help=help_, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in FORWARDED:  # "module:function", main by default
        module, _, function = FORWARDED[argv[0]][0].partition(":")
        return getattr(importlib.import_module(module), function or "main")(argv[1:])
    args = parser().parse_args(argv)
    if args.verb is None:  # bare `isthmus`: what it can do
        parser().print_help()
        return 0
    return reported("isthmus", IsthmusError, args.run, args)


def reported(prog: str, errors, fn, *args) -> int:
    """``fn(*args)``; an error of the kind ``errors`` is one line on stderr and exit status 2 (a
    user's mistake or a missing resource, not a traceback)."""
    try:
        return fn(*args)
    except errors as exc:
        print(f"{prog}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
