"""Carry shipped bundled configs over a change of the shared header ``opencl/dtype.h`` alone.

A config is keyed by the sha256 of its kernel's full source, which is dtype.h + the family's .cl, so
any edit of dtype.h makes every shipped config stale although no kernel changed. This rewrites the
key of each entry that was current for the OLD header and the family's CURRENT .cl file to the
current fingerprint; entries whose .cl changed too (really stale) are left as they are.

    git show main:opencl/dtype.h > /tmp/old-dtype.h
    python -m benchmarks rehash_bundled /tmp/old-dtype.h python/isthmus/tune/bundled/*.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

SMOKE = "rewrites shipped bundled files in place (a maintenance tool, run by hand)"


def rehash(entries: list[dict], old_header: str) -> int:
    from isthmus import knobs
    from isthmus.tune.db import code_of, fingerprint
    from isthmus.tune.space import kernel_family

    moved = 0
    for e in entries:
        fam = kernel_family(e["kernel"])
        if fam is None:
            continue
        old = hashlib.sha256(code_of(old_header + "\n" + (knobs.kernel_dir() / fam.source).read_text()).encode()).hexdigest()
        new_hash, options = fingerprint(fam, e["dtype"])
        if e["source_hash"] == old and e["options"] == options and old != new_hash:
            e["source_hash"] = new_hash
            moved += 1
    return moved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old_header", help="the dtype.h the configs were tuned with")
    p.add_argument("files", nargs="+", help="bundled JSON files to rewrite in place")
    args = p.parse_args(argv)
    old_header = Path(args.old_header).read_text()
    for f in args.files:
        doc = json.loads(Path(f).read_text())
        moved = rehash(doc["entries"], old_header)
        Path(f).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{f}: {moved} of {len(doc['entries'])} entries carried to the current dtype.h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
