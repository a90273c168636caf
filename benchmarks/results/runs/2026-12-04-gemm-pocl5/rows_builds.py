"""gemm's rows variant (VARIANT 3) on the GPU machine's PoCL 5.0: which (RM, RN, RW) build and compute
right? (In call 1 the gemm_variants smoke run stopped at "rows RM4 RN2 RW4": 'failed to build the
program', an empty build log.) Each config in a process of its own, 8 at a time, x @ W.T at
RM x 96 x 40 (and 3 x 96 x 40) against float64; a config that fails is tried again alone, and with
POCL_WORK_GROUP_METHOD=cbs.   python rows_builds.py [cpu|gpu]"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

CHILD = r'''
import json, sys
import numpy as np
import isthmus
from isthmus.ops.resolve import forced, forget_resolved
from isthmus.ops.specs import gemm as G
kind, rm, rn, rw, m = sys.argv[1], *map(int, sys.argv[2:6])
dev = next(d for d in isthmus.devices() if d.backend == "opencl" and d.kind == kind)
fam = G.family_for(False, True)
p = {**{t.name: t.default for t in fam.tunables}, "VARIANT": 3, "RM": rm, "RN": rn, "RW": rw}
rng = np.random.default_rng()
a = rng.standard_normal((m, 40)).astype(np.float32); w = rng.standard_normal((96, 40)).astype(np.float32)
ref = a.astype(np.float64) @ w.astype(np.float64).T
try:
    with forced(fam, p):
        got = isthmus.ops.gemm(dev.asarray(a), dev.asarray(w), trans_b=True).to_numpy()
    print(json.dumps({"ok": True, "err": float(np.linalg.norm(got - ref) / np.linalg.norm(ref))}))
except isthmus.IsthmusError as exc:
    print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {str(exc)[-300:]}"}))
'''


def one(kind, rm, rn, rw, m, env=None):
    e = dict(os.environ, POCL_KERNEL_CACHE="0", ISTHMUS_CACHE_DIR=tempfile.mkdtemp(), **(env or {}))
    r = subprocess.run([sys.executable, "-c", CHILD, kind, str(rm), str(rn), str(rw), str(m)], env=e,
                       capture_output=True, text=True, timeout=200)
    if r.returncode:
        return {"ok": False, "error": f"exit {r.returncode}: {r.stderr.strip()[-300:]}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    configs = [(rm, rn, rw, m) for rm in (1, 2, 4, 8, 16) for rn in (1, 2, 4, 8) for rw in (4, 8) if rm * rn <= 32
               for m in sorted({rm, 3})]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda c: one(kind, *c), configs))
    bad = []
    for c, res in zip(configs, results):
        right = res.get("ok") and res["err"] < 1e-5
        print(f"RM{c[0]:<2} RN{c[1]} RW{c[2]} m={c[3]:<2} {'right' if right else 'WRONG'} {res}", flush=True)
        if not right:
            bad.append(c)
    for c in bad:  # alone (no other build at the same time), then with the other work-group method
        print(f"again alone RM{c[0]} RN{c[1]} RW{c[2]} m={c[3]}: {one(kind, *c)}", flush=True)
        print(f"again cbs   RM{c[0]} RN{c[1]} RW{c[2]} m={c[3]}: {one(kind, *c, env={'POCL_WORK_GROUP_METHOD': 'cbs'})}",
              flush=True)
    print(f"{len(configs) - len(bad)} of {len(configs)} right; wrong or not built: {bad}")


if __name__ == "__main__":
    main()
