"""``isthmus db show | export FILE | import FILE | clear``: the user's tuning database."""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import IsthmusError
from . import reported
from ..tune import db
from ..tune.db import fingerprint
from ..tune.exchange import MAX_DOCUMENT_BYTES, load_document, undeclared
from ..tune.space import kernel_family

PIPE_WIDTH = 1000  # wider than any row: piped output keeps whole rows (or use --json)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="isthmus db", description="the tuning database (ISTHMUS_TUNING_DB)")
    sub = p.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("show", help="list the best config per kernel, device, dtype and size bucket")
    s.add_argument("--bundled", action="store_true", help="show the configs shipped with isthmus instead")
    s.add_argument("--json", action="store_true", help="print the export document instead of a table")
    e = sub.add_parser("export", help="write the best configs as JSON")
    e.add_argument("file", help="output file ('-': standard output)")
    i = sub.add_parser("import", help="merge configs from a JSON export (validated; all or nothing)")
    i.add_argument("file")
    c = sub.add_parser("clear", help="delete every run and best config")
    c.add_argument("--yes", action="store_true", help="do not ask (needed when standard input is not a terminal)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return reported("isthmus db", (IsthmusError, OSError), _VERBS[args.verb], args)


def _show(args) -> int:
    from rich.console import Console
    from rich.table import Table

    store = db.bundled() if args.bundled else db.user()
    doc = store.export()
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    where = "bundled with isthmus" if args.bundled else str(store.path)
    counts = store.counts()
    t = Table(title=f"tuning database {where}: {counts['best']} best configs, {counts['runs']} runs")
    for col in ("kernel", "dtype", "device", "driver", "bucket", "params", "time (ms)", "vs default", "source"):
        t.add_column(col)
    stale = undeclared = 0
    for e in doc["entries"]:
        dev = e["device"]
        speed = f"{e['default_ms'] / e['time_ms']:.2f}x" if e.get("default_ms") and e["time_ms"] > 0 else "-"
        family = kernel_family(e["kernel"])  # current: tuned for the kernel source (and options) this isthmus has
        current = family is not None and fingerprint(family, e["dtype"]) == (e["source_hash"], e["options"])
        stale += family is not None and not current
        undeclared += family is None
        bucket = e["bucket"]  # a user's kernel: its sizes in order
        t.add_row(e["kernel"], e["dtype"], f"{dev['backend']} {dev['name']}", dev["driver"],
                  " ".join(f"{k}={v}" for k, v in bucket.items()) if isinstance(bucket, dict) else
                  "x".join(map(str, bucket)),
                  " ".join(f"{k}={v}" for k, v in e["params"].items()), f"{e['time_ms']:.4g}", speed,
                  "current" if current else "[yellow]older[/yellow]" if family is not None else "declared kernel")
    notes = []
    if stale:
        notes.append(f"{stale} configs were tuned for another version of their kernel's source: launches do not "
                     f"use them (retune, or regenerate the bundled ones with benchmarks/tune_gpu.py)")
    if undeclared:
        notes.append(f"{undeclared} configs are of kernels declared with isthmus.tune.declare (not in this process): "
                     f"a launch of such a kernel uses them when it is declared with the same source")
    t.caption = "; ".join(notes) or None
    # a terminal gets its own width; a pipe or file gets rows that are never cut or wrapped
    (Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)).print(t)
    return 0


def _export(args) -> int:
    doc = db.user().export()
    text = json.dumps(doc, indent=1, sort_keys=True)
    if args.file == "-":
        print(text)
    else:
        with open(args.file, "w") as f:
            f.write(text + "\n")
        print(f"exported {len(doc['entries'])} configs to {args.file}", file=sys.stderr)
    return 0


def _import(args) -> int:
    with open(args.file, "rb") as f:
        data = f.read(MAX_DOCUMENT_BYTES + 1)
    doc = load_document(data, source=args.file)
    count = db.user().import_document(doc, source=args.file)
    db.forget()
    print(f"imported {count} configs from {args.file} into {db.user().path}", file=sys.stderr)
    kept = undeclared(doc)
    if kept:
        print(f"note: {', '.join(kept)} {'is a kernel' if len(kept) == 1 else 'are kernels'} declared with "
              f"isthmus.tune.declare, not in this process: {'its' if len(kept) == 1 else 'their'} configs were "
              f"stored as given (checked when the kernel is declared and launched)", file=sys.stderr)
    return 0


def _clear(args) -> int:
    store = db.user()
    if not args.yes:
        count = store.counts()["best"]
        if not sys.stdin.isatty():
            print(f"isthmus db clear: not deleting {count} tuned configs in {store.path} without confirmation "
                  "(standard input is not a terminal); pass --yes", file=sys.stderr)
            return 2
        if input(f"delete all {count} tuned configs in {store.path}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing deleted", file=sys.stderr)
            return 1
    count = store.clear()
    db.forget()
    print(f"cleared {count} configs from {store.path}", file=sys.stderr)
    return 0


_VERBS = {"show": _show, "export": _export, "import": _import, "clear": _clear}
