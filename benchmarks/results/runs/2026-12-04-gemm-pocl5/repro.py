"""Issue 26 item 7: gemm TM16 TN64 W2x4 TK16 (KS8) x @ W.T at 3x96x40 on PoCL 5.0.

Each experiment runs in a process of its own (PoCL reads its environment once): REPS launches of
the forced config with fresh inputs into an output poisoned with NaN, against a float64 reference.
Kernel variants are copies of opencl/ with one change to gemm.cl (ISTHMUS_KERNEL_DIR):
  base    the kernel as it is
  zero    ra/rb (the registers a K-step is fetched into) zero-initialized
  poison  the local tiles filled with NaN (and a barrier) before the first staging: a read of
          local memory that no staging wrote gives NaN on any compiler
  barrier the barrier after the first staging taken by every group (also those whose split-K
          range is empty, which stage nothing)
  clamp   every work-item fetches and stages an A quad (q clamped to the last one: the extra
          work-items repeat its loads and write the same values to the same place)
Usage: python repro.py [device-kind: cpu|gpu] ; prints one line per experiment."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
REPS = int(os.environ.get("REPS", "12"))

CHILD = r'''
import json, os, sys
import numpy as np
import isthmus
from isthmus.ops.resolve import forced, forget_resolved
from isthmus.ops.specs import gemm as G
kind, tb, m, n, k, cfg = sys.argv[1], sys.argv[2] == "1", *map(int, sys.argv[3:6]), json.loads(sys.argv[6])
dev = next(d for d in isthmus.devices() if d.backend == "opencl" and d.kind == kind)
fam = G.family_for(False, tb) if tb else G.SPEC
params = {**fam.defaults(dev), **cfg}
rng = np.random.default_rng()
errs = []
for _ in range(int(os.environ.get("REPS", "12"))):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    ref = G.reference(np, a.astype(np.float64), b.astype(np.float64), trans_b=tb)
    da, db = dev.asarray(a), dev.asarray(b)
    out = dev.asarray(np.full((m, n), np.nan, np.float32))
    forget_resolved()
    with forced(fam, params):
        isthmus.ops.gemm(da, db, out, trans_b=tb)
    got = out.to_numpy().astype(np.float64)
    e = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) if np.isfinite(got).all() else float("nan")
    errs.append(e)
    if e != e or e > 1e-5:
        bad = np.argwhere(~(np.abs(got - ref) <= 1e-4 * (1 + np.abs(ref))))
        errs[-1] = (e, sorted({int(c) for _, c in bad})[:12], sorted({int(r) for r, _ in bad}))
print(json.dumps({"device": dev.name[:24] + " " + dev.platform[:34], "errs": errs}))
'''

EDITS = {
    "zero": [("    ACC ra[LQA * 4], rb[LQB * 4];", "    ACC ra[LQA * 4] = {0}, rb[LQB * 4] = {0};")],
    "poison": [("    if (ntiles > 0) {\n        FETCH(kbeg);",
                "    for (int i = tid; i < 2 * TK * (TM + PADA); i += NT) ((__local ACC*)As)[i] = (ACC)NAN;\n"
                "    for (int i = tid; i < 2 * TK * (TN + PADB); i += NT) ((__local ACC*)Bs)[i] = (ACC)NAN;\n"
                "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                "    if (ntiles > 0) {\n        FETCH(kbeg);")],
    "barrier": [("        STAGE(0);\n        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n",
                 "        STAGE(0);\n    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n")],
    "clamp": [("            const int q = tid + l * NT;                                             \\\n"
               "            if (QA_EXACT || q < QA) {                                               \\\n"
               "                const int r = m0",
               "            const int q = min(tid + l * NT, QA - 1);                                \\\n"
               "            {                                                                       \\\n"
               "                const int r = m0"),
              ("            const int q = tid + l * NT;                                             \\\n"
               "            if (QA_EXACT || q < QA) {                                               \\\n"
               "                _Pragma(\"unroll\")                                                   \\\n"
               "                for (int e = 0; e < 4; ++e)                                         \\\n"
               "                    As",
               "            const int q = min(tid + l * NT, QA - 1);                                \\\n"
               "            {                                                                       \\\n"
               "                _Pragma(\"unroll\")                                                   \\\n"
               "                for (int e = 0; e < 4; ++e)                                         \\\n"
               "                    As")],
}


def kernel_dir(variant: str, tmp: str) -> str:
    src = os.path.join(ROOT, "opencl")
    if variant == "base":
        return src
    dst = os.path.join(tmp, variant)
    if os.path.isdir(dst):
        return dst
    shutil.copytree(src, dst)
    path = os.path.join(dst, "gemm.cl")
    text = open(path).read()
    for old, new in EDITS[variant]:
        assert old in text, (variant, old)
        text = text.replace(old, new)
    open(path, "w").write(text)
    return dst


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    cfg = dict(VARIANT=1, TM=16, TN=64, WPTM=2, WPTN=4, TK=16, KS=8)
    runs = [  # (label, variant, env, trans_b, shape, config changes)
        ("x@W.T base", "base", {}, 1, (3, 96, 40), {}),
        ("x@W.T base again", "base", {}, 1, (3, 96, 40), {}),
        ("A@B base", "base", {}, 0, (3, 96, 40), {}),
        ("x@W.T VARIANT 0", "base", {}, 1, (3, 96, 40), {"VARIANT": 0}),
        ("x@W.T VLD 0", "base", {}, 1, (3, 96, 40), {"VLD": 0}),
        ("x@W.T TN32 (A exact)", "base", {}, 1, (3, 96, 40), {"TN": 32}),
        ("x@W.T 16x96x40", "base", {}, 1, (16, 96, 40), {}),
        ("x@W.T 3x64x40", "base", {}, 1, (3, 64, 40), {}),
        ("x@W.T 3x96x64", "base", {}, 1, (3, 96, 64), {}),
        ("x@W.T 1 thread", "base", {"POCL_MAX_PTHREAD_COUNT": "1", "POCL_CPU_MAX_CU_NUM": "1"}, 1, (3, 96, 40), {}),
        ("x@W.T wg=loopvec", "base", {"POCL_WORK_GROUP_METHOD": "loopvec"}, 1, (3, 96, 40), {}),
        ("x@W.T wg=cbs", "base", {"POCL_WORK_GROUP_METHOD": "cbs"}, 1, (3, 96, 40), {}),
        ("x@W.T -cl-opt-disable", "base", {"POCL_EXTRA_BUILD_FLAGS": "-cl-opt-disable"}, 1, (3, 96, 40), {}),
        ("x@W.T ra/rb zeroed", "zero", {}, 1, (3, 96, 40), {}),
        ("x@W.T local poisoned", "poison", {}, 1, (3, 96, 40), {}),
        ("x@W.T A staging clamped", "clamp", {}, 1, (3, 96, 40), {}),
    ]
    if os.environ.get("ROUND") == "2":  # where the fault's edges are (call 2)
        runs = [
            ("x@W.T 3x96x40 again", "base", {}, 1, (3, 96, 40), {}),
            ("x@W.T 3x96x128 (no empty split)", "base", {}, 1, (3, 96, 128), {}),
            ("x@W.T KS2 (no empty split)", "base", {}, 1, (3, 96, 40), {"KS": 2}),
            ("x@W.T KS4 (split 3 empty)", "base", {}, 1, (3, 96, 40), {"KS": 4}),
            ("x@W.T barrier always", "barrier", {}, 1, (3, 96, 40), {}),
            ("x@W.T barrier always 16x96x40", "barrier", {}, 1, (16, 96, 40), {}),
            ("x@W.T TK32 (QA=NT=128)", "base", {}, 1, (3, 96, 40), {"TK": 32}),
            ("x@W.T W4x4 (QA=NT=64)", "base", {}, 1, (3, 96, 40), {"WPTM": 4}),
            ("x@W.T TM8 W1x4 (QA32 NT128)", "base", {}, 1, (3, 96, 40), {"TM": 8, "WPTM": 1}),
            ("x@W.T TM32 (QA128 NT256)", "base", {}, 1, (3, 96, 40), {"TM": 32}),
            ("x@W.T TN128 W2x8 (QA64 NT128)", "base", {}, 1, (3, 96, 40), {"TN": 128, "WPTN": 8}),
            ("A@B TM8 W1x4 (QA32 NT128)", "base", {}, 0, (3, 96, 40), {"TM": 8, "WPTM": 1}),
        ]
    if kind == "gpu":
        runs = [r for r in runs if not any(key.startswith("POCL") for key in r[2])]
    only = os.environ.get("ONLY")
    with tempfile.TemporaryDirectory() as tmp:
        for label, variant, env, tb, (m, n, k), change in runs:
            if only and only not in label:
                continue
            e = dict(os.environ, ISTHMUS_KERNEL_DIR=kernel_dir(variant, tmp), POCL_KERNEL_CACHE="0",
                     ISTHMUS_CACHE_DIR=tempfile.mkdtemp(dir=tmp), **env)
            r = subprocess.run([sys.executable, "-c", CHILD, kind, str(tb), str(m), str(n), str(k),
                                json.dumps({**cfg, **change})], env=e, capture_output=True, text=True, timeout=300)
            if r.returncode:
                print(f"{label:28s} {kind}: exit {r.returncode} {r.stderr.strip().splitlines()[-1:]}", flush=True)
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            ok = sum(1 for x in res["errs"] if isinstance(x, float) and x <= 1e-5)
            worst = [x for x in res["errs"] if not (isinstance(x, float) and x <= 1e-5)][:3]
            print(f"{label:28s} {kind} {res['device']}: {ok}/{len(res['errs'])} right; wrong: {worst}", flush=True)


if __name__ == "__main__":
    main()
