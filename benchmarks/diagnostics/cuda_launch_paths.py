"""Which CUDA call launches one prepared kernel with the least host time (GPU only).

    python -m benchmarks cuda_launch_paths [--out DIR]

The candidates for isthmus' prepared launch (Plan.launch), all with the same tiny kernel and the
same arguments packed once, in one run: CuPy's RawKernel call (the baseline), CuPy's Cython
``driver.launchKernel`` with pre-packed arguments, ``cuLaunchKernel`` through ctypes with every
argument pre-converted, and a one-kernel CUDA graph replayed by CuPy's ``Graph.launch`` and by
``cuGraphLaunch`` through ctypes. Host time per launch is measured twice: in rounds of 1,000
launches (fewer than the driver's queue holds, so the host never waits for the device) and of
20,000 (where a path faster than the device drains its queue shows the device's rate instead);
device time per launch from events around 1,000 back-to-back launches. It also checks what a
driver call does on a thread that never selected the device.
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import threading

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = "CUDA only (CuPy and the CUDA driver)"
SOURCE = r'''extern "C" __global__ void tiny(long long n, float a, float* y) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * y[i] + 1.0f;
}'''
N = 256


def host_us(fn, calls, rounds, sync):
    """(median, fastest) host µs per call over ``rounds`` rounds of ``calls`` calls."""
    t = measure.per_call_times(fn, calls, sync, rounds=rounds, warmup=200)
    return t.median, t.low


def device_us(fn, calls, stream):
    return measure.device_times(measure.CupyClock(stream), fn, repeat=7, warmup=0, batch=calls).median * 1e3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="folder for cuda_launch_paths-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--device", default="cuda:0", help="the CUDA device (for the report; the paths use device 0)")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    import cupy

    c = ctypes
    cupy.cuda.Device(0).use()
    stream = cupy.cuda.Stream(non_blocking=False)
    rk = cupy.RawKernel(SOURCE, "tiny")
    y = cupy.ones(N, cupy.float32)
    kargs = (np.int64(N), np.float32(0.5), y)
    grid, block = (N // 64,), (64,)
    rk(grid, block, kargs, stream=stream)
    stream.synchronize()

    cells = [np.array([N], np.int64), np.array([0.5], np.float32), np.array([y.data.ptr], np.uint64)]
    params = (c.c_void_p * 3)(*[x.ctypes.data for x in cells])
    packed = (rk.kernel.ptr, grid[0], 1, 1, block[0], 1, 1, 0, stream.ptr, c.addressof(params), 0)
    launch_kernel = cupy.cuda.driver.launchKernel

    libcuda = c.CDLL("libcuda.so.1")
    cu_launch = libcuda.cuLaunchKernel
    cu_launch.restype = c.c_int
    cu_launch.argtypes = [c.c_void_p] + [c.c_uint] * 7 + [c.c_void_p] * 3
    ct_launch = functools.partial(cu_launch, c.c_void_p(rk.kernel.ptr), c.c_uint(grid[0]), c.c_uint(1), c.c_uint(1),
                                  c.c_uint(block[0]), c.c_uint(1), c.c_uint(1), c.c_uint(0), c.c_void_p(stream.ptr),
                                  c.c_void_p(c.addressof(params)), None)

    def capture(count):
        with stream:
            stream.begin_capture()
            for _ in range(count):
                launch_kernel(*packed[:8], stream.ptr, packed[9], 0)
            g = stream.end_capture()
        g.launch(stream)
        stream.synchronize()
        return g

    g1 = capture(1)
    g100 = capture(100)
    cu_graph = libcuda.cuGraphLaunch
    cu_graph.restype = c.c_int
    cu_graph.argtypes = [c.c_void_p, c.c_void_p]
    exec_ptr = getattr(g1, "graphExec", None)
    ct_graph = functools.partial(cu_graph, c.c_void_p(exec_ptr), c.c_void_p(stream.ptr)) if exec_ptr else None

    paths = [("CuPy RawKernel call", lambda: rk(grid, block, kargs, stream=stream), 1),
             ("cupy driver.launchKernel, pre-packed", lambda: launch_kernel(*packed), 1),
             ("ctypes cuLaunchKernel, pre-converted (partial)", ct_launch, 1),
             ("CuPy Graph.launch, 1-kernel graph", functools.partial(g1.launch, stream), 1),
             ("CuPy Graph.launch, 100-kernel graph, per kernel", functools.partial(g100.launch, stream), 100)]
    if ct_graph is not None:
        paths.append(("ctypes cuGraphLaunch, 1-kernel graph (partial)", ct_graph, 1))
    rows = []
    for name, fn, per in paths:
        h1, h1min = host_us(fn, 1000 // per or 1, 9, stream.synchronize)
        h2, _ = host_us(fn, 20000 // per or 1, 5, stream.synchronize)
        d = device_us(fn, 1000 // per or 1, stream)
        rows.append({"path": name, "host_us_1k": h1 / per, "host_us_1k_min": h1min / per, "host_us_20k": h2 / per,
                     "device_us": d / per})
    y_host = y.get()
    expect_ok = bool(np.all(np.isfinite(y_host)))

    # a driver call on a thread that never selected the device
    seen = {}

    def fresh():
        seen["ctypes"] = ct_launch()
        try:
            launch_kernel(*packed)
            seen["cupy"] = 0
        except Exception as exc:  # noqa: BLE001
            seen["cupy"] = repr(exc)
        seen["graph"] = ct_graph() if ct_graph else None
    t = threading.Thread(target=fresh)
    t.start()
    t.join()
    stream.synchronize()

    base = rows[0]["host_us_1k"]
    for r in rows:
        r["x_rawkernel"] = r["host_us_1k"] / base
    import isthmus

    report = measure.Report("cuda_launch_paths",
                            "Which CUDA call launches one prepared kernel with the least host time",
                            isthmus.device(args.device), data={"rows": rows, "fresh_thread": seen},
                            extra={"cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
                                   "cuda_driver": cupy.cuda.runtime.driverGetVersion()},
                            notes=[f"a driver call on a thread that never selected the device: {seen}; outputs finite: "
                                   f"{expect_ok}"])
    report.add_records(rows, ["path", "host_us_1k", "host_us_1k_min", "host_us_20k", "device_us", "x_rawkernel"])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0 if expect_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
