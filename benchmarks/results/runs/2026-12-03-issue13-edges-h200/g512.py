"""gemm f32 at small squares on NVIDIA OpenCL against CLBlast, in alternating rounds (the shape
sweep's time_pair): each candidate config served as if tuned (a config source in front of the
tuning database), so the op's host path is the one a user gets."""
import json, os, sys
import numpy as np
import isthmus
import isthmus.measure
from isthmus.ops import resolve as R
from isthmus.ops.specs import gemm as G
sys.path.insert(0, os.getcwd())
from benchmarks import shapes as S

dev = next(d for d in isthmus.devices() if d.backend == "opencl" and os.environ.get("VENDOR", "NVIDIA") in d.vendor)
peers = S.Peers(dev)
rng = np.random.default_rng(5)
CANDS = json.loads(os.environ.get("CANDS", "[]"))
current = {}
R.config_source.insert(0, lambda spec, d, dt, problem: current.get("p") if spec.name == "gemm" else None)
rounds = int(os.environ.get("ROUNDS", "9"))
for size in json.loads(os.environ.get("SIZES", "[512]")):
    case = S._gemm_case(dev, peers, rng, "float32", size, size, size, False, f"{size}^3")
    base = R.resolve(G.family_for(False, False), dev, isthmus.dtypes.lookup("float32"), {"m": size, "n": size, "k": size})[0]
    C = [None] + [dict(base, **c) for c in CANDS]
    for p in C:
        current["p"] = p
        R.forget_resolved()
        fam = G.family_for(False, False)
        if p is not None and not fam.is_valid(p, dev, {"m": size, "n": size, "k": size}):
            print(f"{size} {p}: not valid", flush=True); continue
        ours_ms, peer_ms = S.time_pair(dev, peers, case.ours, case.peer, rounds, 0.4)
        with dev.capture() as gr:
            for _ in range(50):
                case.ours()
        kern_us = isthmus.measure.device_ms(dev, gr.launch, repeat=7, warmup=2) / 50 * 1e3
        gr.close()
        out = case.result(); ref = case.peer_result()
        err = float(np.abs(out - ref).max() / np.abs(ref).max())
        used = R.resolve(fam, dev, isthmus.dtypes.lookup("float32"), {"m": size, "n": size, "k": size})[0]
        short = {k: used[k] for k in ("VARIANT", "TM", "TN", "TK", "WPTM", "WPTN", "KS")}
        print(f"{size}^3 {'resolved' if p is None else 'cand'} {short}: isthmus {case.flops / ours_ms / 1e9:6.2f} "
              f"CLBlast {case.flops / peer_ms / 1e9:6.2f} TFLOP/s ratio {peer_ms / ours_ms:.3f} err {err:.1e} | kernel replayed {kern_us:.1f} us", flush=True)
