"""Host overhead per launch of a tiny kernel: from Java (a runtime thread, the calling
thread, a plain Java thread) vs from Python vs the direct PyOpenCL / CuPy call.

    python -m benchmarks java_overhead [--quick] [--device ID] [--out DIR]

The Java paths are timed in Java (System.nanoTime around the loop, synchronized at the end);
the Python paths the same way through ``isthmus.measure`` (a wall clock around the loop and the
final synchronize), so the two compare.
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks import _results
from benchmarks._jvm import java_version, start_jvm
from isthmus import measure

SMOKE = ["--quick", "--out", "{out}"]

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

    def loop():
        for a in values:
            kernel(x, a, n, config=cfg)
    return _loop_ns(loop, iters, x.device.synchronize)


def _loop_ns(loop, iters: int, sync) -> float:
    """ns per launch of one ``loop`` of ``iters`` launches, the final synchronize included (as the
    Java side times it)."""
    return measure.host_ms(loop, repeat=1, warmup=0, sync=sync) * 1e6 / iters


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

    def loop():
        for _ in range(iters):
            launch()
    return _loop_ns(loop, iters, sync)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    p.add_argument("--out", default=None, help="folder for java_overhead-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    iters = 400 if args.quick else 20000
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
    report = measure.Report("java_overhead", f"java_overhead on {dev.id} ({dev.name}, {dev.vendor})", dev,
                            data={"rows": rows}, extra={"java": java_version(jpype)}, notes=[
           f"tiny kernel (n={n}), {iters} launches per path after 100 warm-up launches, synchronized at the end",
           "a Java launch that repeats a recent one (same config, buffers and numbers) replays the plan "
           "Kernel's launch memo prepared for it; the 'new scalar per launch' rows miss that memo every time",
           f"target: Java from an isthmus thread <= 1.5x Python: measured {ratio:.2f}x "
           f"({'met' if ratio <= 1.5 else 'NOT met'}); with a new scalar per launch, Java / Python {fresh:.2f}x"])
    report.add_records(rows, ["path", "us per launch", "x Python"])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    jx.close()
    x.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
