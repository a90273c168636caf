"""Merge the configs of a tune_gpu.py run (its bundled-<tag>.json) into a shipped bundled file, as
``tune_gpu.py --merge-into`` does at the end of a run: for the device and kernels the bundle
holds, its entries replace the file's of the same problems and those tuned for an older source;
entries that no longer validate are dropped.

    python -m benchmarks merge_bundled /tmp/r/bundled-cuda-nvidia-h200.json \\
        python/isthmus/tune/bundled/cuda-h200.json --kernels softmax

Only the bundle's entries tuned for the current source of their kernel are merged (a bundle from
a tuning database that also holds runs of an older source would otherwise ship dead configs);
``--kernels`` narrows the merge further.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SMOKE = "rewrites a shipped bundled file (a maintenance tool, run by hand)"


def _slot(e: dict) -> tuple:
    return e["kernel"], json.dumps(e["device"], sort_keys=True)


def _problem(e: dict) -> tuple:
    return (*_slot(e), json.dumps(e["bucket"], sort_keys=True), e["dtype"], e["options"])


def merge(path: Path, bundle: dict) -> None:
    """Put ``bundle``'s entries into the bundled file at ``path``: for the kernels and device it
    holds, they replace the file's entries of the same problem and every entry tuned for another
    source of the kernel; the file's other problems stay (a run may re-tune a few shapes). Entries
    that no longer validate are dropped; validated like any import."""
    from isthmus.tune.exchange import validate

    old = json.loads(path.read_text()) if path.exists() else {"format": bundle["format"], "schema": bundle["schema"],
                                                               "entries": []}
    # per kernel and device, the source the bundle was tuned for: the file's entries of another
    # source are stale; those of the same source stay unless the bundle re-tuned their problem
    source = {_slot(e): e["source_hash"] for e in bundle["entries"]}
    retuned = {_problem(e) for e in bundle["entries"]}
    kept = [e for e in old["entries"]
            if _slot(e) not in source or (e["source_hash"] == source[_slot(e)] and _problem(e) not in retuned)]
    fits = [e for e in kept if validate(dict(old, entries=[e]), skip_bad=True)]
    if len(fits) < len(kept):  # tuned for tunables a kernel no longer has
        print(f"dropped {len(kept) - len(fits)} stale configs from {path}", file=sys.stderr)
    kept = fits
    doc = dict(bundle, entries=sorted(kept + bundle["entries"], key=lambda e: (e["kernel"], e["device"]["name"],
                                                                              json.dumps(e["bucket"]))))
    cores = {**old.get("cores", {}), **bundle.get("cores", {})}  # (CPU devices' core counts, by name)
    if cores:
        doc["cores"] = {name: cores[name] for name in sorted(cores)}
    validate(doc, source=str(path))
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"merged {len(bundle['entries'])} configs into {path} ({len(doc['entries'])} in all)", file=sys.stderr)


def current(entries: list[dict], kernels: list[str] | None) -> tuple[list[dict], int]:
    """The entries of ``kernels`` (all if None) tuned for the kernel source as it is now, and how
    many others were left out."""
    from isthmus.tune.db import fingerprint
    from isthmus.tune.space import kernel_family

    kept = []
    for e in entries:
        fam = kernel_family(e["kernel"])
        if fam is None or (kernels and e["kernel"] not in kernels):
            continue
        if (e["source_hash"], e["options"]) == fingerprint(fam, e["dtype"]):
            kept.append(e)
    return kept, len(entries) - len(kept)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bundle", help="bundled-<tag>.json written by benchmarks/tune_gpu.py")
    p.add_argument("into", help="the shipped file, e.g. python/isthmus/tune/bundled/cuda-h200.json")
    p.add_argument("--kernels", nargs="*", default=None, help="merge only these kernels' entries")
    args = p.parse_args(argv)
    bundle = json.loads(Path(args.bundle).read_text())
    entries, left = current(bundle.get("entries", []), args.kernels)
    if left:
        print(f"left out {left} entries of other kernels or of another kernel source", file=sys.stderr)
    if not entries:
        print(f"{args.bundle}: nothing to merge", file=sys.stderr)
        return 1
    merge(Path(args.into), dict(bundle, entries=entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
