import time, numpy as np, isthmus
dev = isthmus.device("opencl:0")
k = dev.compile("__kernel void nop(__global int* x) { if (get_global_id(0) == 1u << 30) x[0] = 1; }", "nop")
x = dev.empty((4,), "int32")
cfg = isthmus.LaunchConfig((64,), (64,))
for _ in range(10): k(x, config=cfg)
dev.synchronize()
for name, sync in (("throughput", False), ("latency (sync each)", True)):
    best = []
    for r in range(5):
        t = time.perf_counter()
        for _ in range(500):
            k(x, config=cfg)
            if sync: dev.synchronize()
        dev.synchronize(); best.append((time.perf_counter() - t) / 500 * 1e6)
    print(name, "us per empty launch", [round(b, 1) for b in best])
from isthmus import measure
print("event-bracketed device ms of one empty launch", [round(measure.device_ms(dev, lambda: k(x, config=cfg), repeat=20, warmup=3), 4) for _ in range(3)])
a = np.random.default_rng(0).standard_normal(128256).astype(np.float32)
ts=[]
for _ in range(200):
    t=time.perf_counter(); a.argmax(); ts.append(time.perf_counter()-t)
print("numpy argmax 128256 us", round(np.median(ts)*1e6,1))
