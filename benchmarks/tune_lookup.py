"""Cost of a tuning-database lookup, and of a tuned launch against an untuned one.

    python benchmarks/tune_lookup.py [--device ID] [--out benchmarks/results]

Measures (median of rounds, after warm-up): ``isthmus.tune.db.lookup`` (memoized), the first,
unmemoized lookup (SQLite query with fallback), ``resolve`` as a library launch calls it, and the
host time per call of ``isthmus.ops.axpy`` with an empty database and with a tuned config.
Target: a lookup after warm-up in <= 20 us; a tuned launch no slower than an untuned one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = p.parse_args(argv)
    os.environ["ISTHMUS_TUNING_DB"] = os.path.join(tempfile.mkdtemp(prefix="isthmus-lookup-"), "tuning.sqlite")

    import numpy as np

    import isthmus
    from isthmus.dtypes import lookup as dtype
    from isthmus.library import FAMILIES
    from isthmus.library.family import forget_resolved, resolve
    from isthmus.measure import per_call_us
    from isthmus.tune import db

    dev = isthmus.device(args.device)
    fam, f32 = FAMILIES["axpy"], dtype("float32")
    store = db.user()
    for i in range(200):  # a database with some content: other buckets, the same device
        store.record(db.key_for(fam, dev, "float32", {"n": 1 << (i % 28)}), {"n": 1 << (i % 28)},
                     {"WG": 64, "VPT": (1, 2, 4, 8, 16)[i % 5]}, 1.0 + i, "ok")
    db.forget()
    problem = {"n": 100_000}
    t0 = time.perf_counter()
    db.lookup(fam, dev, f32, problem)
    first_us = (time.perf_counter() - t0) * 1e6
    memo_us = per_call_us(lambda: db.lookup(fam, dev, f32, problem), 20000, rounds=7)
    resolve(fam, dev, f32, problem)
    resolve_us = per_call_us(lambda: resolve(fam, dev, f32, problem), 20000, rounds=7)

    x = dev.asarray(np.ones(4096, np.float32))
    y = dev.asarray(np.ones(4096, np.float32))
    call = lambda: isthmus.ops.axpy(2.0, x, y)  # noqa: E731
    store.clear()
    db.forget()
    untuned = per_call_us(call, 2000, dev.synchronize)
    store.record(db.key_for(fam, dev, "float32", {"n": 4096}), {"n": 4096}, {"WG": 128, "VPT": 8}, 0.01, "ok")
    db.forget()
    tuned = per_call_us(call, 2000, dev.synchronize)
    assert resolve(fam, dev, f32, {"n": 4096})[0] == {"WG": 128, "VPT": 8}
    forget_resolved()
    doc = {"device": dev.id, "name": dev.name, "first_lookup_us": first_us, "memoized_lookup_us": memo_us,
           "resolve_us": resolve_us, "axpy_host_us_untuned": untuned, "axpy_host_us_tuned": tuned}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = f"{dev.backend}{dev.index}-{dev.kind}"
    (out / f"tune_lookup-{tag}.json").write_text(json.dumps(doc, indent=1))
    md = (f"# Tuning database lookup on {dev.id} ({dev.name})\n\n| what | us |\n|---|---|\n"
          f"| first lookup (SQLite, 200 rows, fallback) | {first_us:.1f} |\n"
          f"| lookup after warm-up (memoized) | {memo_us:.2f} |\n| resolve() as a launch calls it | {resolve_us:.2f} |\n"
          f"| ops.axpy host time per call, empty database | {untuned:.1f} |\n"
          f"| ops.axpy host time per call, tuned config | {tuned:.1f} |\n")
    (out / f"tune_lookup-{tag}.md").write_text(md)
    print(md)
    return 0 if memo_us <= 20 else 1


if __name__ == "__main__":
    sys.exit(main())
