"""Cost of a tuning-database lookup, and of a tuned launch against an untuned one.

    python -m benchmarks tune_lookup [--device ID] [--out benchmarks/results/latest] [--quick]

Measures (median of rounds, after warm-up): ``isthmus.tune.db.lookup`` (memoized), the first,
unmemoized lookup (SQLite query with fallback), ``resolve`` as a library launch calls it, and the
host time per call of ``isthmus.ops.axpy`` with an empty database and with a tuned config.
Target: a lookup after warm-up in <= 20 us; a tuned launch no slower than an untuned one.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from benchmarks import _results

SMOKE = ["--quick", "--out", "{out}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--out", default=None, help="folder for tune_lookup-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--quick", action="store_true", help="fewer calls per round (a smoke test)")
    args = p.parse_args(argv)
    scale = 20 if args.quick else 1
    os.environ["ISTHMUS_TUNING_DB"] = os.path.join(tempfile.mkdtemp(prefix="isthmus-lookup-"), "tuning.sqlite")

    import numpy as np

    import isthmus
    from isthmus.dtypes import lookup as dtype
    from isthmus.ops.registry import OPS
    from isthmus.ops.resolve import forget_resolved, resolve
    from isthmus import measure
    from isthmus.tune import db

    dev = isthmus.device(args.device)
    fam, f32 = OPS["axpy"], dtype("float32")
    store = db.user()
    for i in range(200):  # a database with some content: other buckets, the same device
        store.record(db.key_for(fam, dev, "float32", {"n": 1 << (i % 28)}), {"n": 1 << (i % 28)},
                     {"WG": 64, "VPT": (1, 2, 4, 8, 16)[i % 5]}, 1.0 + i, "ok")
    db.forget()
    problem = {"n": 100_000}
    first_us = measure.host_ms(lambda: db.lookup(fam, dev, f32, problem), repeat=1, warmup=0) * 1e3
    memo_us = measure.per_call_us(lambda: db.lookup(fam, dev, f32, problem), 20000 // scale, rounds=7)
    resolve(fam, dev, f32, problem)
    resolve_us = measure.per_call_us(lambda: resolve(fam, dev, f32, problem), 20000 // scale, rounds=7)

    x = dev.asarray(np.ones(4096, np.float32))
    y = dev.asarray(np.ones(4096, np.float32))
    call = lambda: isthmus.ops.axpy(2.0, x, y)  # noqa: E731
    store.clear()
    db.forget()
    untuned = measure.per_call_us(call, 2000 // scale, dev.synchronize)
    store.record(db.key_for(fam, dev, "float32", {"n": 4096}), {"n": 4096}, {"WG": 128, "VPT": 8}, 0.01, "ok")
    db.forget()
    tuned = measure.per_call_us(call, 2000 // scale, dev.synchronize)
    assert resolve(fam, dev, f32, {"n": 4096})[0] == {"WG": 128, "VPT": 8}
    forget_resolved()
    doc = {"first_lookup_us": first_us, "memoized_lookup_us": memo_us, "resolve_us": resolve_us,
           "axpy_host_us_untuned": untuned, "axpy_host_us_tuned": tuned}
    report = measure.Report("tune_lookup", f"Tuning database lookup on {dev.id} ({dev.name})", dev, data=doc)
    report.add_table(["what", "us"], [["first lookup (SQLite, 200 rows, fallback)", f"{first_us:.1f}"],
                                      ["lookup after warm-up (memoized)", f"{memo_us:.2f}"],
                                      ["resolve() as a launch calls it", f"{resolve_us:.2f}"],
                                      ["ops.axpy host time per call, empty database", f"{untuned:.1f}"],
                                      ["ops.axpy host time per call, tuned config", f"{tuned:.1f}"]])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    met = memo_us <= 20
    print(f"target: a memoized lookup in <= 20 us: {'met' if met else 'NOT met'} ({memo_us:.2f} us)"
          + (" (--quick: a smoke run, the target is not judged)" if args.quick else ""))
    return 0 if met or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
