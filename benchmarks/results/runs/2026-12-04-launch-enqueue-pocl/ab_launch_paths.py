"""One process: host us per launch of the tiny kernel: eager (Python scalars), eager (NumPy scalars
of other types), Plan.launch, PyOpenCL enqueue with args set once. Median of rounds."""
import json, sys, time
import numpy as np
import isthmus
import pyopencl as cl
SOURCE = """__kernel void tiny(const long n, const float a, __global float* y)
{ const long i = get_global_id(0); if (i < n) y[i] = a * y[i] + 1.0f; }"""
dev = isthmus.device()
k = dev.compile(SOURCE, "tiny")
y = dev.zeros(256, np.float32)
cfg = isthmus.LaunchConfig((256,), (64,))
plan = k.prepare(256, 0.5, y, config=cfg)
pre = cl.Kernel(k.program.native, "tiny"); pre.set_args(np.int64(256), np.float32(0.5), y._mem.cl)
q = dev.queue
n32, a64 = np.int32(256), np.float64(0.5)
extra = {}
if hasattr(dev, "launcher"):
    chosen = dev.launcher.event_less
    dev.launcher.event_less = True
    extra["plan_ctypes"] = k.prepare(256, 0.5, y, config=cfg).launch
    dev.launcher.event_less = chosen
paths = {"eager_np": lambda: k(n32, a64, y, config=cfg), "eager": lambda: k(256, 0.5, y, config=cfg),
         "plan": plan.launch, "pyopencl_enqueue": lambda: cl.enqueue_nd_range_kernel(q, pre, (256,), (64,)), **extra}
N, R = 1000, 15
for fn in paths.values():
    for _ in range(500): fn()
dev.synchronize()
ts = {name: [] for name in paths}
for _ in range(R):
    for name, fn in paths.items():
        t0 = time.perf_counter()
        for _ in range(N): fn()
        ts[name].append((time.perf_counter() - t0) / N * 1e6)
        dev.synchronize()
print(json.dumps({name: [round(sorted(t)[R // 2], 2), round(min(t), 2)] for name, t in ts.items()}))
