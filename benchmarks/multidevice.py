"""Several devices in one process: buffers and kernels on every device at once, copies between
every pair (with bandwidth; CuPy's own peer copy next to ours where two CUDA GPUs exist), and the
launch config each device resolves for itself. Writes JSON + markdown to benchmarks/results/.

    python benchmarks/multidevice.py [--out DIR] [--mib 256]
"""
from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import numpy as np

import isthmus
from isthmus.bench import machine
from isthmus.library import FAMILIES
from isthmus.library.family import resolve


def concurrent_ops(devs, n: int) -> list[dict]:
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    out, errors = [], []

    def work(d):
        try:
            bx, by = d.asarray(x), d.zeros(n, np.float32)
            t0 = time.perf_counter()
            for _ in range(20):
                isthmus.ops.axpy(0.5, bx, by)
            s = isthmus.ops.sum(by).to_numpy()[0]
            ms = (time.perf_counter() - t0) * 1e3
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
            moved = b.to(dst)
            dst.synchronize()
            t0 = time.perf_counter()
            reps = 5
            for _ in range(reps):
                moved.close()
                moved = b.to(dst)
            dst.synchronize()
            gbs = nbytes * reps / (time.perf_counter() - t0) / 1e9
            row = {"from": src.id, "to": dst.id, "GBps": gbs, "correct": bool(np.array_equal(moved.to_numpy(), host)),
                   "path": "device copy" if src is dst else ("peer" if src.backend == dst.backend == "cuda" else "host")}
            if row["path"] == "peer":
                import cupy

                with cupy.cuda.Device(src.index):
                    a = cupy.asarray(host)
                with cupy.cuda.Device(dst.index):
                    c = cupy.empty_like(a)
                    t0 = time.perf_counter()
                    for _ in range(reps):
                        c.data.copy_from_device(a.data, nbytes)
                    cupy.cuda.Device(dst.index).synchronize()
                    row["cupy_GBps"] = nbytes * reps / (time.perf_counter() - t0) / 1e9
            rows.append(row)
            moved.close()
        b.close()
    return rows


def configs(devs) -> list[dict]:
    rows = []
    for d in devs:
        for name in ("axpy", "gemm"):
            fam = FAMILIES[name]
            problem = {p: 4096 for p in fam.problem}
            params, _ = resolve(fam, d, isthmus.dtypes.lookup("float32"), problem)
            rows.append({"device": d.id, "kernel": name, "params": params})
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--mib", type=int, default=256)
    args = p.parse_args()
    devs = isthmus.devices()
    result = {"machine": machine(), "devices": [d.info() for d in devs],
              "concurrent": concurrent_ops(devs, 1 << 22), "copies": copy_matrix(devs, args.mib << 20),
              "configs": configs(devs)}
    lines = ["# Several devices in one process", "", f"machine: {result['machine']}", "",
             "| device | name | backend |", "| --- | --- | --- |"]
    lines += [f"| {d['id']} | {d['name']} | {d['backend']} |" for d in result["devices"]]
    lines += ["", "Concurrent axpy x20 + sum on every device from its own thread:", "",
              "| device | correct | ms |", "| --- | --- | --- |"]
    lines += [f"| {r['device']} | {r['correct']} | {r.get('ms', float('nan')):.1f} |" for r in result["concurrent"]]
    lines += ["", f"`buf.to(other)` of {args.mib} MiB (wall time, synchronized):", "",
              "| from | to | path | GB/s | CuPy GB/s | correct |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['from']} | {r['to']} | {r['path']} | {r['GBps']:.1f} | {r.get('cupy_GBps', '-') if 'cupy_GBps' not in r else round(r['cupy_GBps'], 1)} | {r['correct']} |"
              for r in result["copies"]]
    lines += ["", "Launch config each device resolved for itself (problem 4096):", "", "| device | kernel | params |",
              "| --- | --- | --- |"]
    lines += [f"| {r['device']} | {r['kernel']} | {r['params']} |" for r in result["configs"]]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "multidevice.json").write_text(json.dumps(result, indent=2, default=str))
    (out / "multidevice.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    ok = all(r["correct"] for r in result["concurrent"]) and all(r["correct"] for r in result["copies"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
