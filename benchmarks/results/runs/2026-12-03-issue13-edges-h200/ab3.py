import time, statistics, importlib.util, numpy as np, isthmus
from isthmus.backends.opencl import launch as L
spec = importlib.util.spec_from_file_location("oldlaunch", "/work/main/.xfer/old/python/isthmus/backends/opencl/launch.py",
                                              submodule_search_locations=None)
src = open("/work/main/.xfer/old/python/isthmus/backends/opencl/launch.py").read()
ns = {}
import isthmus.backends.opencl as pkg
mod = type(L)("isthmus.backends.opencl.oldlaunch"); mod.__package__ = "isthmus.backends.opencl"
exec(compile(src, "oldlaunch", "exec"), mod.__dict__)
old_launch, new_launch = mod._Launch._launch, L._Launch._launch
dev = isthmus.device("opencl:0")
a = dev.asarray(np.ones((8, 8), np.float32)); b = dev.asarray(np.ones((8, 8), np.float32)); c = dev.asarray(np.zeros((8, 8), np.float32))
cls = type(dev)
t = {"old": [], "new": []}
for r in range(10):
    for name, fn in (("old", old_launch), ("new", new_launch)):
        cls._launch = fn
        for _ in range(200): isthmus.ops.gemm(a, b, c)
        dev.synchronize()
        t0 = time.perf_counter()
        for _ in range(3000): isthmus.ops.gemm(a, b, c)
        t[name].append((time.perf_counter() - t0) / 3000 * 1e6)
        dev.synchronize()
print({k: round(statistics.median(v), 1) for k, v in t.items()}, {k: round(min(v), 1) for k, v in t.items()})
