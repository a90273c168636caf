"""Host overhead per launch of a tiny kernel: from Java (a runtime thread, the calling
thread, a plain Java thread) vs from Python vs the direct PyOpenCL / CuPy call.

    python benchmarks/java_overhead.py [--quick] [--device ID]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from java_common import start_jvm, write

SOURCE = """__kernel void scale(__global float* x, float a, int n) {
    int i = get_global_id(0);
    if (i < n) x[i] = a * x[i];
}"""
CUDA_SOURCE = 'extern "C" __global__ void scale(float* x, float a, int n) {' \
              ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = a * x[i]; }'


def python_ns(kernel, x, n, iters, fresh=False):
    """The eager call from Python; ``fresh``: a new scalar every launch (1,024 values in turn)."""
    import isthmus

    cfg = isthmus.LaunchConfig((n,))
    values = [1.0 + (i % 1024) / 1024.0 if fresh else 1.0 for i in range(iters)]
    for a in values[:100]:
        kernel(x, a, n, config=cfg)
    x.device.synchronize()
    t0 = time.perf_counter_ns()
    for a in values:
        kernel(x, a, n, config=cfg)
    x.device.synchronize()
    return (time.perf_counter_ns() - t0) / iters


def direct_ns(dev, x, n, iters):
    """The backend's own call with pre-converted arguments: the floor under any wrapper."""
    if dev.backend == "opencl":
        import pyopencl as cl

        prg = cl.Program(dev.context, SOURCE).build()
        knl = prg.scale
        buf, a, nn = dev._native_arg(dev._buffer_arg(x)), np.float32(1.0), np.int32(n)

        def launch():
            knl(dev.queue, (n,), None, buf, a, nn)
        sync = dev.queue.finish
    else:
        import cupy

        knl = cupy.RawKernel(CUDA_SOURCE, "scale")
        arr = cupy.zeros(n, cupy.float32)
        a, nn = np.float32(1.0), np.int32(n)

        def launch():
            knl((1,), (n,), (arr, a, nn))
        sync = cupy.cuda.Device().synchronize
    for _ in range(100):
        launch()
    sync()
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        launch()
    sync()
    return (time.perf_counter_ns() - t0) / iters


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    args = p.parse_args()
    iters = 2000 if args.quick else 20000
    jpype = start_jvm()
    import isthmus
    import isthmus.java

    dev = isthmus.device(args.device)
    n = 32
    x = dev.asarray(np.ones(n, np.float32))
    kernel = dev.compile(SOURCE, "scale")
    bench = jpype.JClass("io.isthmus.bench.JavaBench")
    jdev = jpype.JClass("io.isthmus.Isthmus").get().device(dev.id)
    jkernel = jdev.compile(SOURCE, "scale", None)
    jx = isthmus.java.to_java(x)
    results = {
        "direct " + ("PyOpenCL" if dev.backend == "opencl" else "CuPy"): direct_ns(dev, x, n, iters),
        "isthmus from Python": python_ns(kernel, x, n, iters),
        "Java, isthmus executor thread": float(bench.launchOnRuntimeThreadNs(jkernel, jx, n, iters)),
        "Java, main (Python-started) thread": float(bench.launchNs(jkernel, jx, n, iters)),
        "Java, plain Java thread": float(bench.launchOnPlainThreadNs(jkernel, jx, n, max(iters // 4, 500))),
        "isthmus from Python, new scalar per launch": python_ns(kernel, x, n, iters, fresh=True),
        "Java, isthmus executor thread, new scalar per launch":
            float(bench.launchFreshOnRuntimeThreadNs(jkernel, jx, n, iters)),
    }
    py = results["isthmus from Python"]
    rows = [{"path": k, "us per launch": v / 1e3, "x Python": v / py} for k, v in results.items()]
    ratio = results["Java, isthmus executor thread"] / py
    fresh = results["Java, isthmus executor thread, new scalar per launch"] / results[
        "isthmus from Python, new scalar per launch"]
    write("java_overhead", dev, rows, ["path", "us per launch", "x Python"],
          [f"tiny kernel (n={n}), {iters} launches per path after 100 warm-up launches, synchronized at the end",
           "a Java launch that repeats a recent one (same config, buffers and numbers) replays the plan "
           "Kernel's launch memo prepared for it; the 'new scalar per launch' rows miss that memo every time",
           f"target: Java from an isthmus thread <= 1.5x Python: measured {ratio:.2f}x "
           f"({'met' if ratio <= 1.5 else 'NOT met'}); with a new scalar per launch, Java / Python {fresh:.2f}x"])
    jx.close()
    x.close()


if __name__ == "__main__":
    main()
