"""fp32 gemm (gemm.cl) on NVIDIA OpenCL: the kernel dir's source timed with the params main resolves
(written by the first run to $OUT/f32params.json, forced in every run)."""
import json, os
import numpy as np
import isthmus
from isthmus import measure
from isthmus.dtypes import lookup
from isthmus.ops.specs import gemm as G
from isthmus.ops.resolve import resolve, forced

OUT = os.environ.get("OUT", "/tmp/out")
ocl = next(d for d in isthmus.devices() if d.backend == "opencl" and os.environ.get("VENDOR", "NVIDIA") in d.vendor)
dt = lookup("float32")
pf = os.path.join(OUT, "f32params.json")
saved = json.load(open(pf)) if os.path.exists(pf) else {}
tag = os.environ.get("TAG", "?")
for (m, n, k, tb) in json.loads(os.environ["SHAPES"]) if "SHAPES" in os.environ else [(512, 512, 512, False), (4096, 4096, 4096, False), (16, 4096, 4096, True), (2048, 2048, 2048, False)]:
    key = f"{m}x{n}x{k}{'T' if tb else ''}"
    fam = G.family_for(False, tb)
    if key not in saved:
        saved[key] = resolve(fam, ocl, dt, {"m": m, "n": n, "k": k})[0]
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    da, db, dc = ocl.asarray(a), ocl.asarray(b), ocl.asarray(np.full((m, n), np.nan, np.float32))
    with forced(fam, saved[key]):
        fn = lambda: G.run(da, db, dc, trans_b=tb)
        fn()
        ref = a @ (b.T if tb else b)
        err = float(np.abs(dc.to_numpy() - ref).max() / np.abs(ref).max())
        ms = min(measure.device_ms(ocl, fn, repeat=5, warmup=2, batch=20) for _ in range(2))
    print(f"{tag:6s} {key:18s} {2 * m * n * k / ms / 1e9:8.2f} TFLOP/s  err {err:.1e}  {saved[key]}", flush=True)
json.dump(saved, open(pf, "w"))
