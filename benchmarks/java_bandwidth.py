"""Host<->device bandwidth from Java: an allocateHost buffer (page-locked where offered), a
plain direct ByteBuffer and a float[], next to the runtime's own pinned copy from Python
(CuPy's pinned-memory copy on CUDA).

    python benchmarks/java_bandwidth.py [--quick] [--device ID] [--mib N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from java_common import start_jvm, write


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
    copy()
    sync()
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        copy()
    sync()
    return (time.perf_counter_ns() - t0) / iters


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller transfers, fewer repeats")
    p.add_argument("--device", default=None)
    p.add_argument("--mib", type=int, default=None, help="transfer size in MiB (default 64, quick 8)")
    args = p.parse_args()
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
    write("java_bandwidth", dev, rows, ["path", "H2D GiB/s", "D2H GiB/s", "host copies"],
          [f"{mib} MiB per transfer, {iters} repeats, blocking copies",
           f"allocateHost H2D is {100 * java_pinned / ref:.0f}% of the Python pinned copy (target on the GPU machine: >= 90%)",
           "host copies: direct ByteBuffers are viewed by NumPy in place (0); float[] goes through JPype's bulk array copy (1)"])
    jb.close()
    buf.close()


if __name__ == "__main__":
    main()
