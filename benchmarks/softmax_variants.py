"""softmax: the two-pass kernel (CACHE=0) next to the row held in registers (CACHE>0), against the
device-to-device copy bandwidth, at 8192x8192, 4096x4096 and 16384x4096 float32.

    python benchmarks/softmax_variants.py --device cuda:0 [--out DIR]      # GPU: well under 60 s
    python benchmarks/softmax_variants.py --device opencl:0 --quick        # PoCL smoke test

Each config is forced (the tuner's way) and timed with device events around a captured graph of
back-to-back launches (no host time between them: the kernel, not the op's host path), median of
repeats; its output is checked against a NumPy float64 reference on a sample of rows. The copy
is the runtime's device-to-device copy of the same bytes (read + write counted, as for softmax).
Rows marked `library` are what ``isthmus.ops.softmax`` resolves to on this device (tuning
database, else defaults). Prints a markdown table; ``--out`` also writes it with a JSON twin.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

SIZES = [(8192, 8192), (4096, 4096), (16384, 4096)]
QUICK_SIZES = [(256, 1024), (64, 333)]
# Two-pass configs around the tuned H200 ones (WG=512 VPT=8 at 8192^2; WG=256 VPT=8 at 4096^2)
# and the default; the held configs are every one the space admits at the size.
TWO_PASS = [(256, 4), (128, 8), (256, 8), (512, 4), (512, 8), (1024, 4), (1024, 8)]
QUICK_TWO_PASS = [(64, 4), (32, 8)]


def configs(fam, dev, problem: dict, dt, quick: bool) -> list[dict]:
    space = list(fam.space(dev, problem, dt))
    pairs = QUICK_TWO_PASS if quick else TWO_PASS
    two = [{"WG": w, "VPT": v, "CACHE": 0} for w, v in pairs]
    held = [p for p in space if p["CACHE"] > 0]
    return [p for p in two if p in space] + held


def time_config(dev, fam, params, x, y, batch: int, repeat: int) -> float:
    """Device ms per launch of softmax(x, out=y) with ``params`` forced (None: what the op resolves)."""
    import isthmus
    from isthmus.library.family import forced
    from isthmus.measure import device_ms

    def one():
        isthmus.ops.softmax(x, out=y)

    with dev.capture() as graph:
        for _ in range(batch):
            if params is None:
                one()
            else:
                with forced(fam, params):
                    one()
    try:
        return device_ms(dev, graph.launch, repeat=repeat, warmup=2) / batch
    finally:
        graph.close()


def check(y, host: np.ndarray, rows: np.ndarray) -> float:
    """Largest elementwise error relative to the row's largest probability, over the sample rows."""
    got = y.to_numpy()[rows].astype(np.float64)
    x64 = host[rows].astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    if not np.isfinite(got).all():
        return float("inf")
    return float((np.abs(got - ref) / ref.max(axis=1, keepdims=True)).max())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true", help="small sizes and few configs (a smoke test, e.g. PoCL)")
    p.add_argument("--out", default=None, help="folder for softmax_variants-<tag>.md/.json")
    args = p.parse_args(argv)

    import isthmus
    from isthmus.bench import copy_bandwidth
    from isthmus.dtypes import lookup
    from isthmus.library.family import resolve
    from isthmus.library.softmax import FAMILY
    from isthmus.tune import db as dbmod

    dev = isthmus.device(args.device)
    dt = lookup("float32")
    gpu = dev.kind == "gpu" and not args.quick
    batch, repeat = (20, 7) if gpu else (2, 3)
    t0 = time.monotonic()
    rng = np.random.default_rng(0)
    rows_out, copies = [], {}
    for rows, cols in (SIZES if not args.quick else QUICK_SIZES):
        problem = {"rows": rows, "cols": cols}
        host = rng.standard_normal((rows, cols), dtype=np.float32)
        poison = np.full((rows, cols), np.nan, np.float32)
        x, y = dev.asarray(host), dev.empty((rows, cols), np.float32)
        nbytes = host.nbytes
        copies[f"{rows}x{cols}"] = copy = copy_bandwidth(dev, nbytes)
        sample = np.unique(np.linspace(0, rows - 1, min(rows, 64)).astype(int))
        lib_params = resolve(FAMILY, dev, dt, problem)[0]
        where = dbmod.explain(FAMILY, dev, dt, problem)
        cands = [(None, "library")] + [(c, "held" if c["CACHE"] else "two-pass") for c in configs(FAMILY, dev, problem,
                                                                                                   dt, args.quick)]
        for params, variant in cands:
            shown = lib_params if params is None else params
            y.copy_from(poison)  # an element a config leaves unwritten shows up in the check
            try:
                ms = time_config(dev, FAMILY, params, x, y, batch, repeat)
                err = check(y, host, sample)
            except Exception as exc:  # one config failing must not lose the others
                rows_out.append({"size": f"{rows}x{cols}", "variant": variant, "params": shown,
                                 "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            gbs = 2 * nbytes / ms / 1e6
            rows_out.append({"size": f"{rows}x{cols}", "variant": variant, "params": shown, "ms": ms, "GBps": gbs,
                             "of_copy": gbs / copy, "max_err": err, "ok": err < 1e-5,
                             "source": (where[0] if where else "defaults") if params is None else "forced"})
        x.close()
        y.close()
    doc = {"device": dev.info(), "identity": dev.identity(), "copy_GBps": copies, "batch": batch, "repeat": repeat,
           "seconds": time.monotonic() - t0, "rows": rows_out}
    text = markdown(doc)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{dev.backend}-{dev.name}").strip("-").lower()
        (out / f"softmax_variants-{tag}.md").write_text(text)
        (out / f"softmax_variants-{tag}.json").write_text(json.dumps(doc, indent=1))
    print(f"{len(rows_out)} configs in {doc['seconds']:.0f} s", file=sys.stderr)
    return 0 if all(r.get("ok") for r in rows_out) else 1


def markdown(doc: dict) -> str:
    d = doc["identity"]
    lines = [f"# softmax variants on {d['name']} ({d['backend']}, driver {d['driver']})", "",
             "float32; device time per launch over a graph of " f"{doc['batch']} launches, median of {doc['repeat']}; "
             "GB/s counts one read + one write per element; copy = device-to-device copy of the same bytes.", "",
             "| size | copy GB/s | variant | WG | VPT | CACHE | ms | GB/s | of copy | max err | |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        p = r["params"]
        head = f"| {r['size']} | {doc['copy_GBps'][r['size']]:.1f} | {r['variant']} | {p['WG']} | {p['VPT']} | {p['CACHE']} |"
        if "error" in r:
            lines.append(f"{head} | | | | | {r['error']} |")
            continue
        note = ("" if r["ok"] else "WRONG ") + (r["source"] if r["variant"] == "library" else "")
        lines.append(f"{head} {r['ms']:.4g} | {r['GBps']:.1f} | {r['of_copy']:.0%} | {r['max_err']:.1e} | {note} |")
    best = {}
    for r in doc["rows"]:
        if r.get("ok") and r["variant"] != "library":
            k = (r["size"], r["variant"])
            if k not in best or r["GBps"] > best[k]["GBps"]:
                best[k] = r
    lines += ["", "Best per size and variant:", ""]
    for (size, variant), r in sorted(best.items()):
        p = r["params"]
        lines.append(f"- {size} {variant}: WG={p['WG']} VPT={p['VPT']} CACHE={p['CACHE']} "
                     f"{r['GBps']:.1f} GB/s = {r['of_copy']:.0%} of copy")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
