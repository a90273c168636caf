"""Loading a safetensors file into device memory (Device.load_safetensors) against the copy ceiling
and against the safetensors package's own NumPy loader, with the file in the page cache.

    python -m benchmarks load_safetensors [--device ID] [--mib 2048] [--staging-kib 16384,65536] [--out DIR]

One file of Llama-like tensors (f16 and f32 random bits; the NumPy loader has no bf16) is written
into --dir and read once (page cache warm). Each candidate runs in a fresh child process, so its
peak resident memory (``ru_maxrss``, its high-water mark reset just before) is its own: growth =
peak - resident before the first run, less the device memory the load holds where device memory
is host memory (PoCL). Timed, each the median of --repeat runs with the wall clock (the load
returns after its copies are done):

- ``read``: the file through its memory map into a pinned buffer, chunk by chunk (the reading alone);
- ``copy``: a pinned buffer to the device, one copy per chunk, each into a new buffer as a load's
  copies go (host->device bandwidth from pinned memory into fresh device memory);
- ``isthmus``: ``dev.load_safetensors(path)`` (reads and copies overlapped), at each staging size;
- ``safetensors``: ``safetensors.numpy.load_file`` then ``dev.asarray`` per tensor.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import _results

SMOKE = ["--mib", "8", "--repeat", "1", "--staging-kib", "1024", "--out", "{out}"]

# (name, shape, dtype) of one decoder layer of a small Llama (hidden 2048, MLP 8192, 8 kv heads of 64)
LAYER = [("q", (2048, 2048), "F16"), ("k", (512, 2048), "F16"), ("v", (512, 2048), "F16"), ("o", (2048, 2048), "F16"),
         ("gate", (8192, 2048), "F16"), ("up", (8192, 2048), "F16"), ("down", (2048, 8192), "F16"),
         ("norm", (2048,), "F32")]
SIZES = {"F16": 2, "F32": 4}


def write_checkpoint(path: Path, mib: int) -> int:
    """Layers of LAYER (the last one cut short) up to ``mib`` MiB of random bits, streamed to disk."""
    entries, at, layer = {}, 0, 0
    while at < mib << 20:
        for name, shape, dtype in LAYER:
            n = int(np.prod(shape)) * SIZES[dtype]
            if at + n > mib << 20 and entries:
                shape, n = (1,) + shape[1:], int(np.prod(shape[1:])) * SIZES[dtype]
            entries[f"model.layers.{layer}.{name}.weight"] = {"dtype": dtype, "shape": list(shape),
                                                              "data_offsets": [at, at + n]}
            at += n
        layer += 1
    header = json.dumps(entries).encode()
    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        left = at
        while left:
            piece = min(left, 64 << 20)
            # random 16-bit words, exponent bits masked off NaN/inf, so the NumPy loader's copies stay plain
            f.write((rng.integers(0, 1 << 16, piece // 2, dtype=np.uint16) & 0xBFFF).tobytes())
            left -= piece
    return at


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


CHILD = r"""
import json, mmap, os, resource, sys, time
import numpy as np
import isthmus
path, how, staging_kib, repeat, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
os.environ["ISTHMUS_LOAD_STAGING_KB"] = str(staging_kib)
dev = isthmus.device(device)
def rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def reset_peak():
    # the peak so far is the imports' and compiles': start it again from the resident memory now
    # (Linux: clear_refs 5 resets the high-water mark that ru_maxrss reports)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return rss_kib()
chunk = staging_kib << 10
size = os.path.getsize(path)
times = []
if how in ("read", "copy"):
    pinned = dev.empty_host((chunk,), np.uint8)
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    data = np.frombuffer(mm, np.uint8)
    pinned[:] = 1
    peak = 0
    dev.synchronize()
    before = reset_peak()
    for _ in range(repeat):
        targets = []
        t0 = time.perf_counter()
        for start in range(0, size - chunk + 1, chunk):
            if how == "read":
                pinned[:] = data[start:start + chunk]
            else:  # into new device memory, as a load's copies go
                targets.append(dev.empty((chunk,), np.uint8).copy_from(pinned))
        dev.synchronize()
        times.append(time.perf_counter() - t0)
        held = dev.memory_in_use()
        peak = peak if times[1:] else rss_kib()
        for t in targets:
            t.close()
        dev.free_pool()
else:
    import gc
    peak = 0
    dev.synchronize()
    before = reset_peak()
    in_use = dev.memory_in_use()
    for _ in range(repeat):
        t0 = time.perf_counter()
        if how == "isthmus":
            loaded = dev.load_safetensors(path)
            bufs = list(loaded.values())
        else:
            from safetensors.numpy import load_file
            bufs = [dev.asarray(a) for a in load_file(path).values()]
        dev.synchronize()
        times.append(time.perf_counter() - t0)
        held = dev.memory_in_use() - in_use
        peak = peak if times[1:] else rss_kib()
        for b in bufs:
            b.close()
        del bufs
        gc.collect()
        dev.free_pool()
print(json.dumps({"times": times, "rss_before_kib": before, "rss_peak_kib": peak, "device_bytes": held,
                  "bytes": size if how in ("isthmus", "safetensors") else (size // chunk) * chunk,
                  "host_is_device": dev.kind == "cpu"}))
"""


def run_child(path: Path, how: str, staging_kib: int, repeat: int, device: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), how, str(staging_kib), str(repeat), device],
                         capture_output=True, text=True, timeout=3600)
    if out.returncode:
        raise SystemExit(f"{how} failed:\n{out.stderr}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    t = statistics.median(r["times"])
    growth = (r["rss_peak_kib"] - r["rss_before_kib"]) * 1024
    host_growth = growth - (r["device_bytes"] if r["host_is_device"] else 0)
    return {"how": how, "staging_MiB": staging_kib / 1024 if how != "safetensors" else None, "seconds": t,
            "GB/s": r["bytes"] / t / 1e9, "least_s": min(r["times"]), "runs": len(r["times"]),
            "peak_growth_MiB": growth / 2**20, "device_MiB": r["device_bytes"] / 2**20 if r["host_is_device"] else 0,
            "host_growth_MiB": host_growth / 2**20}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--mib", type=int, default=2048, help="size of the file's data in MiB")
    p.add_argument("--staging-kib", default="16384,65536", help="staging sizes to load through, comma separated")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", default=None, help="where to write the file (default: a temporary folder)")
    p.add_argument("--out", default=None, help="folder for load_safetensors-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    import isthmus
    from isthmus import measure

    dev = isthmus.device(args.device)
    stagings = [int(s) for s in args.staging_kib.split(",")]
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="load-safetensors-") as tmp:
        path = Path(tmp) / "model.safetensors"
        t0 = time.perf_counter()
        nbytes = write_checkpoint(path, args.mib)
        print(f"wrote {nbytes / 2**20:.0f} MiB in {time.perf_counter() - t0:.1f} s", flush=True)
        warm(path)
        rows = []
        peer = [("safetensors", stagings[-1])] if importlib.util.find_spec("safetensors") else []
        if not peer:
            print("no safetensors+asarray row: the safetensors package is not installed", flush=True)
        for how, staging in [("read", stagings[-1]), ("copy", stagings[-1]), *[("isthmus", s) for s in stagings],
                             *peer]:
            rows.append(run_child(path, how, staging, args.repeat, dev.id))
            print(rows[-1], flush=True)
    ceiling = min(r["GB/s"] for r in rows if r["how"] in ("read", "copy"))
    for r in rows:
        r["of_ceiling"] = r["GB/s"] / ceiling if r["how"] in ("isthmus", "safetensors") else None
    report = measure.Report(
        "load_safetensors", f"Loading a {nbytes / 2**20:.0f} MiB safetensors file (page cache warm)", dev,
        data={"bytes": nbytes, "rows": rows},
        notes=["each candidate in a fresh child process; seconds: median of its runs (wall clock, the load "
               "returns after its copies)",
               "read: memory map -> pinned chunk; copy: pinned chunk -> device; of_ceiling: GB/s over the slower "
               "of the two",
               "peak_growth: ru_maxrss peak of the child's first run - resident before it; device: the device "
               "memory the load held where device memory is host memory (PoCL); host_growth: the difference"])
    report.add_records(rows, ["how", "staging_MiB", "seconds", "least_s", "GB/s", "of_ceiling", "peak_growth_MiB",
                              "device_MiB", "host_growth_MiB", "runs"])
    _results.write(report, args.out, args.tag, args.run)
    if not args.out and not args.run:
        print(report.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
