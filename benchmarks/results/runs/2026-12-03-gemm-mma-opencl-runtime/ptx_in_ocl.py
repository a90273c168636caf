"""Load a PTX file as an NVIDIA OpenCL program binary and time gemm_mma 4096^3 f16 (config from argv[2] JSON)."""
import json, sys, os
import numpy as np
import pyopencl as cl
plat = next(p for p in cl.get_platforms() if "NVIDIA" in p.name)
dev = plat.get_devices()[0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
S = 4096
rng = np.random.default_rng(1)
a = rng.standard_normal((S, S), dtype=np.float32).astype(np.float16)
b = rng.standard_normal((S, S), dtype=np.float32).astype(np.float16)
ref = (a[::64].astype(np.float32) @ b.astype(np.float32))
mf = cl.mem_flags
oa = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a); ob = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
oc = cl.Buffer(ctx, mf.READ_WRITE, size=S * S * 2)
ptx = open(sys.argv[1], "rb").read() + b"\0"
try:
    prg = cl.Program(ctx, [dev], [ptx]).build()
except Exception as exc:
    print(sys.argv[1], "BUILD FAILED", str(exc)[:800]); sys.exit(1)
k = cl.Kernel(prg, "gemm_mma")
k.set_args(np.int32(S), np.int32(S), np.int32(S), np.float32(1), np.float32(0), oa, np.int64(0), ob, np.int64(0), oc, np.int64(0))
p = json.loads(sys.argv[2])
nt = 32 * p["WM"] * p["WN"]
g, l = (S // p["BN"] * nt, S // p["BM"], 1), (nt, 1, 1)
cl.enqueue_fill_buffer(q, oc, np.uint16(0x7e00), 0, S * S * 2)
cl.enqueue_nd_range_kernel(q, k, g, l); q.finish()
out = np.empty((S, S), np.float16); cl.enqueue_copy(q, out, oc); q.finish()
o = out[::64].astype(np.float64)
err = float("nan") if np.isnan(o).any() else float(np.linalg.norm(o - ref) / np.linalg.norm(ref))
ts = []
for r in range(5):
    evs = [cl.enqueue_nd_range_kernel(q, k, g, l) for _ in range(20)]
    q.finish()
    ts.append((evs[-1].profile.end - evs[0].profile.start) / 20 / 1e6)
ms = sorted(ts)[2]
print(f"{os.path.basename(sys.argv[1])}: {2 * S**3 / ms / 1e9:.1f} TFLOP/s err {err:.2e}")
