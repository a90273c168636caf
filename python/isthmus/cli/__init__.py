"""``isthmus devices | demo | bench | tune | db | java | maven-install | jvm-home`` (also ``python -m isthmus``
and ``python -m isthmus.cli``): the tools, one module per verb in this package (:mod:`.devices`,
:mod:`.demo`, :mod:`.bench`, :mod:`.tune`, :mod:`.db`, :mod:`.java`); the JVM launcher's options are
java's own (:mod:`isthmus.java.launcher`)."""
from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from ..errors import IsthmusError
from . import devices


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
    p.set_defaults(run=lambda args: devices.show(args.json))
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
