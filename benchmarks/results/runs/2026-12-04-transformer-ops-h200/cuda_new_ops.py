"""Each op's standard tiny and small workloads on cuda:0, one process per op and dtype with
CUDA_LAUNCH_BLOCKING=1: which op faults (an illegal address poisons the whole process).
  python benchmarks/diagnostics/cuda_new_ops.py [OP...]   (DTS=float32,bfloat16)"""
import subprocess, sys, os
ops = sys.argv[1:]
code = r'''
import sys, numpy as np, isthmus
from isthmus.ops import workloads
dev = isthmus.device("cuda:0")
op, dt = sys.argv[1], sys.argv[2]
np_dt = isthmus.dtypes.lookup(dt).np
for size in ("tiny",):
    for w in workloads.standard(size, dtype=np_dt):
        if w.op != op: continue
        w.call(*w.make(dev)); dev.synchronize()
print("ok")
'''
import isthmus
from isthmus.ops import registry
names = sorted(registry.OPS) if not ops else ops
for op in names:
    for dt in os.environ.get("DTS", "float32,bfloat16").split(","):
        r = subprocess.run([sys.executable, "-c", code, op, dt], capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, CUDA_LAUNCH_BLOCKING="1"))
        last = (r.stdout + r.stderr).strip().splitlines()
        print(op, dt, "rc", r.returncode, (last[-1] if last else "")[:200], flush=True)
