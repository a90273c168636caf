"""Where the host time of a CUDA library call that allocates its result goes (GPU only).

    python benchmarks/cuda_alloc_paths.py [--device cuda:0] [--out DIR]

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
import json
import pstats
from pathlib import Path

import numpy as np


def rounds_us(fns: dict, calls: int = 2000, rounds: int = 7, sync=None) -> dict:
    """200 warm-up calls of each, then ``isthmus bench``'s alternating rounds (median µs per call)."""
    from isthmus.bench import _interleaved

    for fn in fns.values():
        for _ in range(200):
            fn()
    return _interleaved(fns, calls, sync, rounds)


def main() -> None:
    import cupy

    import isthmus
    from isthmus.buffer import Buffer

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
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
    lines = [f"# Host time of allocating a result on {dev.id} ({dev.name})", "",
             f"CuPy {cupy.__version__}, isthmus {isthmus.__version__}; 8x32 float32 (1 KiB); median of 7 alternating "
             f"rounds of 2,000 calls", "", "| step | µs per call |", "| --- | --- |"]
    lines += [f"| {k} | {v:.2f} |" for k, v in us.items()]
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20000):
        isthmus.ops.softmax(x)
    prof.disable()
    dev.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    lines += ["", "cProfile of 20,000 allocating softmax calls (tottime):", "", "```", text.getvalue().strip(), "```"]
    md = "\n".join(lines) + "\n"
    print(md)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "cuda_alloc_paths-h200.md").write_text(md)
        (args.out / "cuda_alloc_paths-h200.json").write_text(json.dumps({"device": dev.info(), "us": us}, indent=2))


if __name__ == "__main__":
    main()
