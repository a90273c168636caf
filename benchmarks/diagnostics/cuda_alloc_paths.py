"""Where the host time of a CUDA library call that allocates its result goes (GPU only).

    python -m benchmarks cuda_alloc_paths [--device cuda:0] [--out DIR]

In one run, in alternating rounds of 2,000 calls (median of 7 rounds), each step of making a
small result (8x32 float32) on its own, then the whole softmax call allocating its result and
with ``out=``, and the same user code in CuPy (``cupy.empty`` plus the RawKernel call):

- CuPy's pool: ``cupy.cuda.alloc`` bare, under the device stream's context, ``cupy.empty``;
- the driver's stream-ordered pool: ``cudaMallocAsync`` / ``cudaFreeAsync`` on the device stream;
- isthmus: ``Device._alloc``, a Buffer made and dropped, ``dev.empty``.

A cProfile of the allocating softmax call follows, so the remaining Python cost has names.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = "CUDA only (CuPy's and the driver's allocators)"


def rounds_us(fns: dict, calls: int = 2000, rounds: int = 7, sync=None) -> dict:
    """200 warm-up calls of each, then alternating rounds of ``calls`` calls (median µs per call)."""
    for fn in fns.values():
        for _ in range(200):
            fn()
    times = measure.interleaved({name: (lambda fn=fn: measure.per_call_us(fn, calls, sync, rounds=1, warmup=0))
                                 for name, fn in fns.items()}, rounds)
    return {name: t.median for name, t in times.items()}


def main(argv=None) -> int:
    import cupy

    import isthmus
    from isthmus.buffer import Buffer

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--out", default=None, help="folder for cuda_alloc_paths-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    s = dev.stream
    rt = cupy.cuda.runtime
    shape, n = (8, 32), 8 * 32 * 4
    x = dev.asarray(np.random.default_rng().standard_normal(shape).astype(np.float32))
    y = isthmus.ops.softmax(x)
    raw_src = r'''extern "C" __global__ void sm(int rows, int cols, const float* x, float* y) {
        int r = blockIdx.x; if (r < rows && threadIdx.x < cols) y[r * cols + threadIdx.x] = x[r * cols + threadIdx.x];
    }'''
    raw = cupy.RawKernel(raw_src, "sm")
    xc = dev._cupy_view(x)

    def stream_alloc():
        with s:
            return cupy.cuda.alloc(n)

    def malloc_async():
        rt.freeAsync(rt.mallocAsync(n, s.ptr), s.ptr)

    def stream_empty():
        with s:
            return cupy.empty(shape, cupy.float32)

    def cupy_user():  # what a CuPy user writes for a new result: cupy.empty, then the kernel
        with s:
            out = cupy.empty(shape, cupy.float32)
            raw((8,), (32,), (np.int32(8), np.int32(32), xc, out))

    dtype = x._dt
    steps = {
        "cupy.cuda.alloc": lambda: cupy.cuda.alloc(n),
        "with stream: cupy.cuda.alloc": stream_alloc,
        "with stream: cupy.empty": stream_empty,
        "cudaMallocAsync+cudaFreeAsync": malloc_async,
        "Device._alloc": lambda: dev._alloc(n),
        "Buffer._allocate (dropped)": lambda: Buffer._allocate(dev, shape, dtype, n),
        "dev.empty (dropped)": lambda: dev.empty(shape, np.float32),
        "softmax(x)": lambda: isthmus.ops.softmax(x),
        "softmax(x, out=y)": lambda: isthmus.ops.softmax(x, out=y),
        "CuPy user: cupy.empty + RawKernel": cupy_user,
    }
    us = rounds_us(steps, sync=dev.synchronize)
    # Two candidate allocators, each in place of Device._alloc for a second set of rounds:
    # CuPy's pool without the stream context where the thread's current stream is the legacy
    # default one, and the driver's stream-ordered pool (freed on the device stream when dropped).
    plain = dev._alloc

    def legacy_shortcut(nbytes):
        if cupy.cuda.get_current_stream().ptr == 0 and rt.getDevice() == dev.index:
            return cupy.cuda.alloc(nbytes)
        return plain(nbytes)

    class AsyncMem:
        __slots__ = ("ptr",)

        def __init__(self, nbytes):
            self.ptr = rt.mallocAsync(nbytes, s.ptr)

        def __del__(self):
            rt.freeAsync(self.ptr, s.ptr)

    for name, alloc in (("legacy-stream shortcut", legacy_shortcut), ("cudaMallocAsync", AsyncMem)):
        dev._alloc = alloc
        try:
            more = rounds_us({f"Device._alloc ({name})": lambda: dev._alloc(n),
                              f"softmax(x) ({name})": lambda: isthmus.ops.softmax(x)}, sync=dev.synchronize)
        finally:
            del dev._alloc
        us.update(more)
    report = measure.Report("cuda_alloc_paths", f"Host time of allocating a result on {dev.id} ({dev.name})", dev,
                            data={"us": us},
                            notes=["8x32 float32 (1 KiB); median of 7 alternating rounds of 2,000 calls"])
    report.add_table(["step", "µs per call"], [[k, f"{v:.2f}"] for k, v in us.items()])
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20000):
        isthmus.ops.softmax(x)
    prof.disable()
    dev.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    report.add_text("cProfile of 20,000 allocating softmax calls (tottime):\n\n```\n"
                    + text.getvalue().strip() + "\n```")
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
