"""Host<->device bandwidth from Java: an allocateHost buffer (page-locked where offered), a
plain direct ByteBuffer and a float[], next to the runtime's own pinned copy from Python
(CuPy's pinned-memory copy on CUDA).

    python -m benchmarks java_bandwidth [--quick] [--device ID] [--mib N] [--out DIR]

The Java paths are timed in Java (System.nanoTime around the copies); the Python path through
``isthmus.measure`` (a wall clock around the copies and the final synchronize).
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks import _results
from benchmarks._jvm import java_version, start_jvm
from isthmus import measure

SMOKE = ["--quick", "--mib", "1", "--out", "{out}"]


def python_pinned_ns(dev, buf, host, iters, upload: bool):
    if dev.backend == "cuda":
        import cupy

        arr = cupy.empty(host.size, cupy.float32)
        pinned = cupy.cuda.alloc_pinned_memory(host.nbytes)
        src = np.frombuffer(pinned, np.float32, host.size)
        copy = (lambda: arr.set(src)) if upload else (lambda: arr.get(out=src))
        sync = cupy.cuda.Device().synchronize
    else:
        copy = (lambda: buf.copy_from(host)) if upload else (lambda: buf.to_numpy(out=host))
        sync = dev.synchronize
    def loop():
        for _ in range(iters):
            copy()
    copy()
    return measure.host_ms(loop, repeat=1, warmup=0, sync=sync) * 1e6 / iters


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller transfers, fewer repeats")
    p.add_argument("--device", default=None)
    p.add_argument("--mib", type=int, default=None, help="transfer size in MiB (default 64, quick 8)")
    p.add_argument("--out", default=None, help="folder for java_bandwidth-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    mib = args.mib or (8 if args.quick else 64)
    iters = 5 if args.quick else 20
    jpype = start_jvm()
    import isthmus
    import isthmus.java

    dev = isthmus.device(args.device)
    n = mib * (1 << 20) // 4
    buf = dev.empty(n, np.float32)
    jb = isthmus.java.to_java(buf)
    bench = jpype.JClass("io.isthmus.bench.JavaBench")
    jdev = jpype.JClass("io.isthmus.Isthmus").get().device(dev.id)
    DType = jpype.JClass("io.isthmus.DType")
    ByteBuffer, ByteOrder = jpype.JClass("java.nio.ByteBuffer"), jpype.JClass("java.nio.ByteOrder")
    pinned = jdev.allocateHost(DType.FLOAT32, n)
    direct = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.nativeOrder())
    array = jpype.JArray(jpype.JFloat)(n)
    host = dev.empty_host(n, np.float32)
    host[:] = 1
    gib = n * 4 / (1 << 30)
    paths = {
        "Python, runtime pinned array" + (" (CuPy pinned)" if dev.backend == "cuda" else ""): (
            python_pinned_ns(dev, buf, host, iters, True), python_pinned_ns(dev, buf, host, iters, False), 0),
        "Java allocateHost ByteBuffer": (float(bench.uploadBufferNs(jb, pinned, iters)),
                                         float(bench.downloadBufferNs(jb, pinned, iters)), 0),
        "Java allocateDirect ByteBuffer": (float(bench.uploadBufferNs(jb, direct, iters)),
                                           float(bench.downloadBufferNs(jb, direct, iters)), 0),
        "Java float[]": (float(bench.uploadArrayNs(jb, array, iters)), float(bench.downloadArrayNs(jb, iters)), 1),
    }
    rows = [{"path": k, "H2D GiB/s": gib / (up / 1e9), "D2H GiB/s": gib / (down / 1e9), "host copies": c}
            for k, (up, down, c) in paths.items()]
    ref = rows[0]["H2D GiB/s"]
    java_pinned = rows[1]["H2D GiB/s"]
    report = measure.Report("java_bandwidth", f"java_bandwidth on {dev.id} ({dev.name}, {dev.vendor})", dev,
                            data={"rows": rows}, extra={"java": java_version(jpype)}, notes=[
           f"{mib} MiB per transfer, {iters} repeats, blocking copies",
           f"allocateHost H2D is {100 * java_pinned / ref:.0f}% of the Python pinned copy (target on the GPU machine: >= 90%)",
           "host copies: direct ByteBuffers are viewed by NumPy in place (0); float[] goes through JPype's bulk array copy (1)"])
    report.add_records(rows, ["path", "H2D GiB/s", "D2H GiB/s", "host copies"])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    jb.close()
    buf.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
