"""Several devices in one process: buffers and kernels on every device at once, copies between
every pair (with bandwidth; CuPy's own peer copy next to ours where two CUDA GPUs exist), and the
launch config each device resolves for itself. Writes JSON + markdown with --out DIR or --run QUESTION
(benchmarks/results/README.md).

    python -m benchmarks multidevice [--out DIR] [--mib 256]       # POCL_DEVICES="pthread pthread" on a CPU
"""
from __future__ import annotations

import argparse
import threading

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure
from isthmus.ops.registry import OPS
from isthmus.ops.resolve import resolve

SMOKE = ["--mib", "1", "--out", "{out}"]


def concurrent_ops(devs, n: int) -> list[dict]:
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    out, errors = [], []

    def work(d):
        try:
            bx, by = d.asarray(x), d.zeros(n, np.float32)
            box = {}

            def chunk():
                for _ in range(20):
                    isthmus.ops.axpy(0.5, bx, by)
                box["s"] = isthmus.ops.sum(by).to_numpy()[0]  # to_numpy waits for the device
            ms = measure.host_ms(chunk, repeat=1, warmup=0)
            s = box["s"]
            ok = np.allclose(by.to_numpy(), 10 * x, rtol=1e-5) and abs(s - 10 * x.sum(dtype=np.float64)) < 1e-3 * n
            out.append({"device": d.id, "correct": bool(ok), "ms": ms})
        except Exception as exc:  # reported, not hidden
            errors.append(f"{d.id}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(d,)) for d in devs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out + [{"device": e, "correct": False} for e in errors]


def copy_matrix(devs, nbytes: int) -> list[dict]:
    rows = []
    host = np.random.default_rng().standard_normal(nbytes // 4).astype(np.float32)
    for src in devs:
        b = src.asarray(host)
        for dst in devs:
            box = {"moved": b.to(dst)}

            def again():
                box["moved"].close()
                box["moved"] = b.to(dst)
            reps = 5
            ms = measure.device_times(measure.WallClock(dst.synchronize), again, repeat=3, warmup=1, batch=reps).median
            moved = box["moved"]
            gbs = nbytes / ms / 1e6
            row = {"from": src.id, "to": dst.id, "GBps": gbs, "correct": bool(np.array_equal(moved.to_numpy(), host)),
                   "path": "device copy" if src is dst else ("peer" if src.backend == dst.backend == "cuda" else "host")}
            if row["path"] == "peer":
                import cupy

                with cupy.cuda.Device(src.index):
                    a = cupy.asarray(host)
                with cupy.cuda.Device(dst.index):
                    c = cupy.empty_like(a)
                    clock = measure.WallClock(cupy.cuda.Device(dst.index).synchronize)
                    ms = measure.device_times(clock, lambda: c.data.copy_from_device(a.data, nbytes), repeat=3,
                                              warmup=1, batch=reps).median
                    row["cupy_GBps"] = nbytes / ms / 1e6
            rows.append(row)
            moved.close()
        b.close()
    return rows


def configs(devs) -> list[dict]:
    rows = []
    for d in devs:
        for name in ("axpy", "gemm"):
            fam = OPS[name]
            problem = {p: 4096 for p in fam.problem}
            params, _ = resolve(fam, d, isthmus.dtypes.lookup("float32"), problem)
            rows.append({"device": d.id, "kernel": name, "params": params})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="folder for multidevice.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--mib", type=int, default=256)
    args = p.parse_args(argv)
    devs = isthmus.devices()
    result = {"concurrent": concurrent_ops(devs, 1 << 22 if args.mib >= 16 else 1 << 16),
              "copies": copy_matrix(devs, args.mib << 20), "configs": configs(devs)}
    report = measure.Report("multidevice", "Several devices in one process", devs, data=result)
    report.add_records(result["concurrent"], ["device", "correct", "ms"],
                       "Concurrent axpy x20 + sum on every device from its own thread:")
    report.add_records(result["copies"], ["from", "to", "path", "GBps", "cupy_GBps", "correct"],
                       f"`buf.to(other)` of {args.mib} MiB (wall time around 5 copies and a synchronize, median of 3):")
    report.add_records(result["configs"], ["device", "kernel", "params"],
                       "Launch config each device resolved for itself (problem 4096):")
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    ok = all(r["correct"] for r in result["concurrent"]) and all(r["correct"] for r in result["copies"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
