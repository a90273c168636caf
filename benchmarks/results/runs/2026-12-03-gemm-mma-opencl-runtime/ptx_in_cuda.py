"""Load a PTX file as a CUDA module (CuPy) and time gemm_mma 4096^3 f16 (config from argv[2] JSON)."""
import json, sys, os
import numpy as np
import cupy as cp
S = 4096
rng = np.random.default_rng(1)
a = rng.standard_normal((S, S), dtype=np.float32).astype(np.float16)
b = rng.standard_normal((S, S), dtype=np.float32).astype(np.float16)
ref = (a[::64].astype(np.float32) @ b.astype(np.float32))
ca, cb = cp.asarray(a), cp.asarray(b); cc = cp.full((S, S), np.nan, cp.float16)
mod = cp.cuda.function.Module(); mod.load(open(sys.argv[1], "rb").read() + b"\0")
f = mod.get_function("gemm_mma")
if os.environ.get("CARVEOUT"):
    cp.cuda.driver.funcSetAttribute(f.ptr, 9, int(os.environ["CARVEOUT"]))
p = json.loads(sys.argv[2]); nt = 32 * p["WM"] * p["WN"]
grid, block = (S // p["BN"], S // p["BM"], 1), (nt, 1, 1)
args = (np.int32(S), np.int32(S), np.int32(S), np.float32(1), np.float32(0), ca, np.int64(0), cb, np.int64(0), cc, np.int64(0))
f(grid, block, args); cp.cuda.runtime.deviceSynchronize()
o = cp.asnumpy(cc)[::64].astype(np.float64)
err = float("nan") if np.isnan(o).any() else float(np.linalg.norm(o - ref) / np.linalg.norm(ref))
def timed(smem):
  ts = []
  for r in range(5):
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(20):
        f(grid, block, args, shared_mem=smem)
    e1.record(); e1.synchronize()
    ts.append(cp.cuda.get_elapsed_time(e0, e1) / 20)
  return sorted(ts)[2]
for smem in [int(x) for x in (sys.argv[3].split(",") if len(sys.argv) > 3 else ["0"])]:
    if smem + 49152 > 48 * 1024:
        cp.cuda.driver.funcSetAttribute(f.ptr, 8, smem)
    ms = timed(smem)
    print(f"CUDA {os.path.basename(sys.argv[1])} +{smem} B dynamic (carveout {os.environ.get('CARVEOUT', '-')}): {2 * S**3 / ms / 1e9:.1f} TFLOP/s err {err:.2e}")
