"""Carry shipped bundled configs over an edit of kernel sources that does not change what a kernel does.

A config is keyed by the sha256 of its kernel's full source (``opencl/dtype.h`` + the family's
.cl with the headers it includes, such as mma.h, expanded; comments and white space aside), so deleting an unused kernel from a .cl file, or any edit of
dtype.h, makes the shipped configs of the families concerned stale although no launched kernel
changed. This rewrites the key of each entry that was current for the OLD copies given (every other
file as it is now) to the current fingerprint; entries that were stale already are left as they are.

    git show main:opencl/reduce.cl > /tmp/old-reduce.cl
    python -m benchmarks rehash_bundled --old reduce.cl=/tmp/old-reduce.cl python/isthmus/tune/bundled/*.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

SMOKE = "rewrites shipped bundled files in place (a maintenance tool, run by hand)"


def rehash(entries: list[dict], old: dict[str, str]) -> int:
    """Rewrite in place the entries current for ``old`` ({file name in opencl/: its old text});
    returns how many were rewritten."""
    from isthmus import knobs
    from isthmus.ops.spec import kernel_source
    from isthmus.tune.db import code_of, fingerprint
    from isthmus.tune.space import kernel_family

    def text(name: str) -> str:
        return old[name] if name in old else (knobs.kernel_dir() / name).read_text()

    moved = 0
    for e in entries:
        fam = kernel_family(e["kernel"])
        if fam is None:
            continue
        before = hashlib.sha256(code_of(kernel_source(fam.source, text)).encode()).hexdigest()
        new_hash, options = fingerprint(fam, e["dtype"])
        if e["source_hash"] == before and e["options"] == options and before != new_hash:
            e["source_hash"] = new_hash
            moved += 1
    return moved


def _old_copy(arg: str) -> tuple[str, str]:
    name, sep, path = arg.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--old takes NAME=OLD_COPY (e.g. reduce.cl=/tmp/old-reduce.cl), got {arg!r}")
    return name, Path(path).read_text()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", type=_old_copy, action="append", required=True, metavar="NAME=OLD_COPY",
                   help="a file of opencl/ as the configs were tuned with (repeatable)")
    p.add_argument("files", nargs="+", help="bundled JSON files to rewrite in place")
    args = p.parse_args(argv)
    old = dict(args.old)
    for f in args.files:
        doc = json.loads(Path(f).read_text())
        moved = rehash(doc["entries"], old)
        Path(f).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{f}: {moved} of {len(doc['entries'])} entries carried to the current {', '.join(old)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
