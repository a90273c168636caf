"""softmax and transpose at the shapes real workloads use, each variant forced next to what the
library resolves, torch in the same run, and the device-to-device copy of the same bytes.

    python -m benchmarks softmax_variants --device cuda:0 [--out DIR]      # GPU: about a minute
    python -m benchmarks softmax_variants --device opencl:0 --quick        # PoCL smoke test

softmax: narrow rows (attention widths), vocabulary-width rows, a square; transpose: square,
odd, odd-but-aligned, tall and wide. Each config is forced (the tuner's way) and timed with device
events around a captured graph of back-to-back launches (the kernel, not the op's host path),
median of repeats; every output is poisoned first and checked against a NumPy float64 reference
on sample rows (softmax) or exactly (transpose). torch (``torch.softmax``, ``copy_(x.t())``) runs
on cuda:0 on the same data, timed with CUDA events (``isthmus.measure`` times both). Rows marked
``library`` are what ``isthmus.ops`` resolves to on this device (tuning database, else the family's
rule and defaults). Prints a markdown table; ``--out`` also writes it with its JSON twin
(``softmax_variants-<backend>-<device>``).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import _results

# (rows, cols) -> forced softmax configs (WG, RPG, VPT, CACHE[, SPLIT]) beside the library's
SOFTMAX = {
    (262144, 128): [(256, 32, 8, 2), (256, 64, 8, 4), (128, 16, 8, 2), (512, 64, 8, 2), (256, 16, 8, 1)],
    (1048576, 32): [(256, 128, 8, 2), (256, 256, 8, 4), (256, 64, 8, 1)],
    (65536, 500): [(256, 8, 8, 2), (256, 16, 8, 4), (512, 16, 8, 2)],
    (8192, 8192): [(512, 1, 8, 2), (256, 1, 8, 4), (128, 1, 8, 8), (512, 1, 8, 1, 2), (256, 1, 8, 2, 2)],
    (4096, 32000): [(1024, 1, 8, 4), (1024, 1, 8, 0), (512, 1, 8, 2, 4), (256, 1, 8, 4, 4), (256, 1, 8, 2, 8),
                    (128, 1, 8, 8, 4), (64, 1, 8, 8, 8), (256, 1, 8, 8, 2), (512, 1, 8, 8, 1)],
    (1024, 128256): [(1024, 1, 8, 0), (256, 1, 8, 4, 16), (128, 1, 8, 8, 16), (256, 1, 8, 8, 8), (512, 1, 8, 4, 8),
                     (512, 1, 8, 8, 4), (1024, 1, 8, 4, 4), (128, 1, 8, 4, 32), (64, 1, 8, 8, 32)],
}
TRANSPOSE_SHAPES = [(8192, 8192), (12345, 6789), (12288, 6784), (6789, 12345), (8388608, 1), (1, 8388608)]
TRANSPOSE = [(64, 8, 1), (64, 8, 0), (32, 8, 1)]
QUICK_SOFTMAX = {(1000, 128): [(64, 2, 4, 1)], (64, 3001): [(64, 1, 8, 8), (64, 1, 4, 0)]}
QUICK_TRANSPOSE_SHAPES = [(300, 200), (123, 457), (65536, 1)]
QUICK_TRANSPOSE = [(16, 4, 0), (16, 4, 1)]
SMOKE = ["--quick", "--out", "{out}"]  # tests/benchmarks: the QUICK_ cases above


def time_graph(dev, fn, batch: int, repeat: int) -> float:
    """Device ms per call of ``fn`` over a captured graph of ``batch`` calls."""
    from isthmus import measure

    with dev.capture() as graph:
        for _ in range(batch):
            fn()
    try:
        return measure.device_ms(dev, graph.launch, repeat=repeat, warmup=2) / batch
    finally:
        graph.close()


def torch_missing() -> str:
    """Why there are no torch rows ('' when there are)."""
    try:
        import torch
    except ImportError as exc:
        return f"no torch rows: torch is not installed ({exc})"
    return "" if torch.cuda.is_available() else f"no torch rows: torch {torch.__version__} sees no CUDA device"


def torch_ms(fn, batch: int, repeat: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    from isthmus import measure

    return measure.device_ms(measure.TorchClock(torch), fn, repeat=repeat, warmup=3, batch=batch)


def softmax_error(y, host: np.ndarray, rows: np.ndarray) -> float:
    got = y.to_numpy()[rows].astype(np.float64)
    x64 = host[rows].astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    if not np.isfinite(got).all():
        return float("inf")
    return float((np.abs(got - ref) / ref.max(axis=1, keepdims=True)).max())


def bench_softmax(dev, cases: dict, batch: int, repeat: int, rng, rows_out: list, copies: dict):
    import isthmus
    from isthmus import measure
    from isthmus.dtypes import lookup
    from isthmus.ops.resolve import forced, resolve
    from isthmus.ops.specs.softmax import SPEC
    from isthmus.tune import db as dbmod

    dt = lookup("float32")
    for (rows, cols), forced_list in cases.items():
        size, problem = f"{rows}x{cols}", {"rows": rows, "cols": cols}
        host = rng.standard_normal((rows, cols), dtype=np.float32)
        x, y = dev.asarray(host), dev.empty((rows, cols), np.float32)
        copies[size] = copy = copies.get(size) or measure.copy_bandwidth(dev, host.nbytes)
        sample = np.unique(np.linspace(0, rows - 1, min(rows, 64)).astype(int))
        poison = np.full((rows, cols), np.nan, np.float32)
        lib = resolve(SPEC, dev, dt, problem)[0]
        where = dbmod.explain(SPEC, dev, dt, problem)
        cands = [(None, "library")] + [(dict(zip(("WG", "RPG", "VPT", "CACHE", "SPLIT"), c)), "forced") for c in forced_list]
        for params, how in cands:
            shown = lib if params is None else params
            if shown["WG"] > dev.max_work_group_size:
                continue
            y.copy_from(poison)

            def one(params=params):
                if params is None:
                    isthmus.ops.softmax(x, out=y)
                else:
                    with forced(SPEC, params):
                        isthmus.ops.softmax(x, out=y)
            try:
                ms = time_graph(dev, one, batch, repeat)
                err = softmax_error(y, host, sample)
            except Exception as exc:  # one config failing must not lose the others
                rows_out.append({"op": "softmax", "size": size, "how": how, "params": shown,
                                 "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            gbs = 2 * host.nbytes / ms / 1e6
            rows_out.append({"op": "softmax", "size": size, "how": how, "params": shown, "ms": ms, "GBps": gbs,
                             "of_copy": gbs / copy, "max_err": err, "ok": err < 1e-5,
                             "source": (where[0] if where else "rule/defaults") if params is None else "forced"})
        x.close()
        y.close()
        add_torch(rows_out, "softmax", size, host, _torch_softmax, copy, batch, repeat)


def bench_transpose(dev, shapes, configs, batch: int, repeat: int, rng, rows_out: list, copies: dict):
    import isthmus
    from isthmus import measure
    from isthmus.dtypes import lookup
    from isthmus.ops.resolve import forced, resolve
    from isthmus.ops.specs.transpose import SPEC

    dt = lookup("float32")
    for rows, cols in shapes:
        size = f"{rows}x{cols}"
        host = rng.standard_normal((rows, cols), dtype=np.float32)
        x, y = dev.asarray(host), dev.empty((cols, rows), np.float32)
        copies[size] = copy = copies.get(size) or measure.copy_bandwidth(dev, host.nbytes)
        poison = np.full((cols, rows), np.nan, np.float32)
        picks = np.unique(np.linspace(0, cols - 1, min(cols, 64)).astype(int))  # rows of y checked
        expect = np.ascontiguousarray(host[:, picks].T)
        lib = resolve(SPEC, dev, dt, {"rows": rows, "cols": cols})[0]
        cands = [(None, "library")] + [(dict(zip(("TILE", "BLOCK_ROWS", "ORDER"), c)), "forced") for c in configs]
        for params, how in cands:
            shown = lib if params is None else params
            if shown["TILE"] * shown["BLOCK_ROWS"] > dev.max_work_group_size:
                continue
            y.copy_from(poison)

            def one(params=params):
                if params is None:
                    isthmus.ops.transpose(x, out=y)
                else:
                    with forced(SPEC, params):
                        isthmus.ops.transpose(x, out=y)
            try:
                ms = time_graph(dev, one, batch, repeat)
                got = y.to_numpy()
                ok = bool(np.array_equal(got[picks], expect)) and not np.isnan(got).any()
            except Exception as exc:
                rows_out.append({"op": "transpose", "size": size, "how": how, "params": shown,
                                 "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            gbs = 2 * host.nbytes / ms / 1e6
            rows_out.append({"op": "transpose", "size": size, "how": how, "params": shown, "ms": ms, "GBps": gbs,
                             "of_copy": gbs / copy, "ok": ok, "source": "library" if params is None else "forced"})
        x.close()
        y.close()

        def make(t):
            import torch
            out = torch.empty((t.shape[1], t.shape[0]), dtype=t.dtype, device=t.device)
            return lambda: out.copy_(t.t())
        add_torch(rows_out, "transpose", size, host, make, copy, batch, repeat)


def _torch_softmax(t):
    import torch

    return lambda: torch.softmax(t, dim=1)


def add_torch(rows_out, op, size, host, make, copy, batch, repeat):
    try:
        import torch
        if not torch.cuda.is_available():
            return
        t = torch.from_numpy(host).to("cuda:0")
        ms = torch_ms(make(t), batch, repeat)
        del t
        torch.cuda.empty_cache()
    except ImportError:
        return
    gbs = 2 * host.nbytes / ms / 1e6
    rows_out.append({"op": op, "size": size, "how": "torch", "params": {}, "ms": ms, "GBps": gbs,
                     "of_copy": gbs / copy, "ok": True, "source": f"torch {torch.__version__}"})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--quick", action="store_true", help="small sizes and few configs (a smoke test, e.g. PoCL)")
    p.add_argument("--only", choices=("softmax", "transpose"), default=None)
    p.add_argument("--library", action="store_true", help="only what the library resolves (and torch), no forced configs")
    p.add_argument("--sizes", default=None, help="comma-separated softmax sizes to run (e.g. 4096x32000)")
    p.add_argument("--out", default=None, help="folder for softmax_variants-<tag>.md/.json")
    _results.add_run_option(p)
    args = p.parse_args(argv)

    import isthmus
    from isthmus import measure

    dev = isthmus.device(args.device)
    gpu = dev.kind == "gpu" and not args.quick
    batch, repeat = (10, 5) if gpu else (2, 3)
    t0 = time.monotonic()
    rng = np.random.default_rng(0)
    rows_out, copies = [], {}
    cases = QUICK_SOFTMAX if args.quick else SOFTMAX
    if args.library:
        cases = {k: [] for k in cases}
    if args.sizes:
        cases = {k: v for k, v in cases.items() if f"{k[0]}x{k[1]}" in args.sizes.split(",")}
    if args.only in (None, "softmax"):
        bench_softmax(dev, cases, batch, repeat, rng, rows_out, copies)
    configs = [] if args.library else QUICK_TRANSPOSE if args.quick else TRANSPOSE
    if args.only in (None, "transpose"):
        bench_transpose(dev, QUICK_TRANSPOSE_SHAPES if args.quick else TRANSPOSE_SHAPES, configs, batch, repeat, rng,
                        rows_out, copies)
    doc = {"identity": dev.identity(), "copy_GBps": copies, "batch": batch, "repeat": repeat,
           "seconds": time.monotonic() - t0, "rows": rows_out}
    try:
        import torch
        doc["torch"] = torch.__version__
    except ImportError:
        pass
    d = doc["identity"]
    missing = torch_missing()
    if missing:
        print(missing, file=sys.stderr)
    report = measure.Report("softmax_variants", f"softmax and transpose shapes on {d['name']} ({d['backend']}, "
                            f"driver {d['driver']})", dev, data=doc, notes=[
                                f"float32; device time per launch over a graph of {doc['batch']} launches, median of "
                                f"{doc['repeat']}; GB/s counts one read + one write per element; copy = "
                                f"device-to-device copy of the same bytes; torch {doc.get('torch', '-')} on cuda:0, "
                                "same data."] + ([missing] if missing else []))
    report.add_table(["op", "size", "copy GB/s", "how", "params", "ms", "GB/s", "of copy", "vs torch", "max err", ""],
                     table(doc))
    print(report.markdown())
    _results.write(report, args.out, args.run)
    print(f"{len(rows_out)} rows in {doc['seconds']:.0f} s", file=sys.stderr)
    return 0 if all(r.get("ok") for r in rows_out) else 1


def table(doc: dict) -> list[list]:
    out = []
    torch = {(r["op"], r["size"]): r["GBps"] for r in doc["rows"] if r["how"] == "torch" and "GBps" in r}
    for r in doc["rows"]:
        p = " ".join(f"{k}={v}" for k, v in r["params"].items())
        head = [r["op"], r["size"], f"{doc['copy_GBps'][r['size']]:.0f}", r["how"], p]
        if "error" in r:
            out.append(head + ["", "", "", "", "", r["error"]])
            continue
        vs = torch.get((r["op"], r["size"]))
        note = ("" if r["ok"] else "WRONG ") + (r["source"] if r["how"] == "library" else "")
        err = f"{r['max_err']:.1e}" if "max_err" in r else ""
        ratio = "" if vs is None else f"{r['GBps'] / vs:.2f}x"
        out.append(head + [f"{r['ms']:.4g}", f"{r['GBps']:.0f}", f"{r['of_copy']:.0%}", ratio, err, note])
    return out


if __name__ == "__main__":
    sys.exit(main())
