import time, numpy as np, isthmus, contextlib
from isthmus import measure
from isthmus.ops.resolve import forced
from isthmus.ops.specs import sampling as S
dev = isthmus.device("opencl:0")
for rows in (1, 8, 64):
    x = np.random.default_rng(0).standard_normal((rows, 128256)).astype(np.float32) * 3
    xb = dev.asarray(x); out = dev.empty((rows,), "int32")
    for p in [dict(WG=64, LAYOUT=0), dict(WG=64, LAYOUT=1), dict(WG=16, LAYOUT=1) if False else dict(WG=32, LAYOUT=1), dict(WG=256, LAYOUT=1)]:
        with forced(S.SAMPLE, {**p, "SPLIT": 1}):
            fn = lambda: isthmus.ops.sample(xb, seed=3, offsets=1, out=out)
            fn()
            ms = [measure.device_ms(dev, fn, repeat=5, warmup=1) for _ in range(2)]
        print(rows, p, "dev ms", [round(m, 4) for m in ms], out.to_numpy()[:4], flush=True)
