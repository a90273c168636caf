"""``isthmus db show | export FILE | import FILE | clear`` (show and export: ``--kernel NAME``,
``--device ID_OR_NAME``): the user's tuning database."""
from __future__ import annotations

import argparse
import functools
import json
import re
import sys

from ..errors import InvalidArgumentError, IsthmusError
from . import reported
from ..tune import db
from ..tune.db import fingerprint
from ..tune.exchange import MAX_DOCUMENT_BYTES, export, import_document, load_document, undeclared
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
    for verb in (s, e):
        verb.add_argument("--kernel", action="append", default=None, metavar="NAME",
                          help="only this kernel's configs (repeatable)")
        verb.add_argument("--device", default=None, metavar="ID_OR_NAME",
                          help="only configs of this device: an id of this machine (opencl:0) or a part of the "
                               "device name (case-insensitive, e.g. H200)")
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

    store = db.bundled() if args.bundled else db.user()
    doc = _filtered(export(store), args)
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    where = "bundled with isthmus" if args.bundled else str(store.path) + (" (read-only)" if store.readonly else "")
    counts = store.counts()
    shown = f"{len(doc['entries'])} of " if args.kernel or args.device else ""
    t = table(doc, f"tuning database {where}: {shown}{counts['best']} best configs, {counts['runs']} runs")
    # a terminal gets its own width; a pipe or file gets rows that are never cut or wrapped
    (Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)).print(t)
    return 0


def table(doc: dict, title: str):
    """The entries of an export document as a rich table. Nothing is ever cut to an ellipsis: in a
    narrow terminal a cell folds onto more lines (names and numbers alike), and text from the
    database is shown as it is, never read as markup."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(title))
    for col in ("kernel", "dtype", "device", "driver", "bucket", "params", "time (ms)", "vs default", "source"):
        t.add_column(col, overflow="fold", min_width=3, justify="right" if col in ("time (ms)", "vs default") else "left")
    stale = undeclared = 0
    for e in doc["entries"]:
        dev = e["device"]
        speed = f"{e['default_ms'] / e['time_ms']:.2f}x" if e.get("default_ms") and e["time_ms"] > 0 else "-"
        family = kernel_family(e["kernel"])  # current: tuned for the kernel source (and options) this isthmus has
        current = family is not None and fingerprint(family, e["dtype"]) == (e["source_hash"], e["options"])
        stale += family is not None and not current
        undeclared += family is None
        bucket = e["bucket"]  # a user's kernel not declared here: its sizes in order
        cells = (e["kernel"], e["dtype"], f"{dev['backend']} {dev['name']}", dev["driver"],
                 " ".join(f"{k}={v}" for k, v in bucket.items()) if isinstance(bucket, dict) else
                 "x".join(map(str, bucket)),
                 " ".join(f"{k}={v}" for k, v in e["params"].items()), f"{e['time_ms']:.4g}", speed)
        t.add_row(*map(escape, cells),
                  "current" if current else "[yellow]older[/yellow]" if family is not None else "declared kernel")
    notes = []
    if stale:
        notes.append(f"{stale} configs were tuned for another version of their kernel's source: launches do not "
                     f"use them (retune, or regenerate the bundled ones with benchmarks/tune_gpu.py)")
    if undeclared:
        notes.append(f"{undeclared} configs are of kernels declared with isthmus.tune.declare (not in this process): "
                     f"a launch of such a kernel uses them when it is declared with the same source")
    t.caption = "; ".join(notes) or None
    return t


def _filtered(doc: dict, args) -> dict:
    """``doc`` with only the entries of ``--kernel`` and ``--device`` (when given)."""
    entries = doc["entries"]
    if args.kernel:
        present = sorted({e["kernel"] for e in entries})
        unknown = [k for k in args.kernel if k not in present and kernel_family(k) is None]
        if unknown:
            raise InvalidArgumentError(f"--kernel {' '.join(unknown)}: no such kernel; the database has configs "
                                       f"of {', '.join(present) or 'none'}")
        entries = [e for e in entries if e["kernel"] in args.kernel]
    if args.device:
        entries = [e for e in entries if _device_matches(e["device"], args.device)]
    return {**doc, "entries": entries}


def _device_matches(stored: dict, wanted: str) -> bool:
    if re.fullmatch(r"[a-z]+:\d+", wanted.strip()):  # a device id of this machine: its identity
        ident = _identity(wanted.strip())
        return all(stored[k] == ident[k] for k in ("backend", "vendor", "name"))
    return wanted.strip().lower() in stored["name"].lower()


@functools.lru_cache(maxsize=None)
def _identity(device_id: str) -> dict:
    from ..device import device

    return device(device_id).identity()


def _export(args) -> int:
    doc = _filtered(export(db.user()), args)
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
    count = import_document(db.user(), doc, source=args.file)
    db.forget()
    print(f"imported {count} configs from {args.file} into {db.user().path}", file=sys.stderr)
    stale = len(doc["entries"]) - count  # (every other entry was valid: an import is all or nothing)
    if stale:
        print(f"left out {stale} configs tuned for another version of their kernel's source (an older isthmus, or "
              f"an edited source_hash/options): no launch would use them; retune those kernels", file=sys.stderr)
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
