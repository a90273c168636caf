"""Carry shipped bundled configs over a change of the shared header ``opencl/dtype.h`` alone.

A config is keyed by the sha256 of its kernel's full source, which is dtype.h + the family's .cl, so
any edit of dtype.h makes every shipped config stale although no kernel changed. This rewrites the
key of each entry that was current for the OLD header and the family's CURRENT .cl file to the
current fingerprint; entries whose .cl changed too (really stale) are left as they are.

    git show main:opencl/dtype.h > /tmp/old-dtype.h
    python -m benchmarks rehash_bundled /tmp/old-dtype.h python/isthmus/tune/bundled/*.json

``--old-source FILE.cl=PATH`` also carries the configs of a .cl file over a change that leaves the
code those configs compile the same (a variant added under its own ``#if``, a kernel removed):
entries current for PATH (with the old header) are re-keyed to the current FILE.cl. Whether the
change leaves them the same is the caller's judgement; pass the current dtype.h as the old header
when only the .cl changed.

    git show main:opencl/reduce.cl > /tmp/old-reduce.cl
    python -m benchmarks rehash_bundled opencl/dtype.h --old-source reduce.cl=/tmp/old-reduce.cl \
        python/isthmus/tune/bundled/*.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

SMOKE = "rewrites shipped bundled files in place (a maintenance tool, run by hand)"


def rehash(entries: list[dict], old_header: str, old_sources: dict[str, str] | None = None) -> int:
    from isthmus import knobs
    from isthmus.tune.db import code_of, fingerprint
    from isthmus.tune.space import kernel_family

    moved = 0
    for e in entries:
        fam = kernel_family(e["kernel"])
        if fam is None:
            continue
        old_cl = (old_sources or {}).get(fam.source) or (knobs.kernel_dir() / fam.source).read_text()
        old = hashlib.sha256(code_of(old_header + "\n" + old_cl).encode()).hexdigest()
        new_hash, options = fingerprint(fam, e["dtype"])
        if e["source_hash"] == old and e["options"] == options and old != new_hash:
            e["source_hash"] = new_hash
            moved += 1
    return moved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old_header", help="the dtype.h the configs were tuned with")
    p.add_argument("files", nargs="+", help="bundled JSON files to rewrite in place")
    p.add_argument("--old-source", action="append", default=[], metavar="FILE.cl=PATH",
                   help="the .cl file FILE.cl (opencl/) as the configs were tuned with; repeatable")
    args = p.parse_args(argv)
    old_header = Path(args.old_header).read_text()
    old_sources = {}
    for item in args.old_source:
        name, sep, path = item.partition("=")
        if not sep:
            p.error(f"--old-source takes FILE.cl=PATH, got {item!r}")
        old_sources[name] = Path(path).read_text()
    for f in args.files:
        doc = json.loads(Path(f).read_text())
        moved = rehash(doc["entries"], old_header, old_sources)
        Path(f).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{f}: {moved} of {len(doc['entries'])} entries carried to the current source")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
