"""Where 512^3 f32 gemm's time goes on NVIDIA OpenCL: the op's call (device events over back-to-back
calls), the same launches replayed from a captured list (no Python per call), host time per call
(no waiting), and CLBlast's call the same two ways."""
import os, sys, time
import numpy as np
import isthmus
from isthmus import measure
sys.path.insert(0, os.getcwd())
from benchmarks import shapes as S

dev = next(d for d in isthmus.devices() if d.backend == "opencl" and os.environ.get("VENDOR", "NVIDIA") in d.vendor)
peers = S.Peers(dev)
rng = np.random.default_rng(5)
for size in (512, 1024):
    case = S._gemm_case(dev, peers, rng, "float32", size, size, size, False, f"{size}^3")
    for rnd in range(2):
        op_ms = measure.device_ms(dev, case.ours, repeat=7, warmup=2, batch=50)
        with dev.capture() as g:
            for _ in range(50):
                case.ours()
        rep_ms = measure.device_ms(dev, g.launch, repeat=7, warmup=2) / 50
        g.close()
        dev.synchronize(); t0 = time.perf_counter()
        for _ in range(200):
            case.ours()
        host_us = (time.perf_counter() - t0) / 200 * 1e6; dev.synchronize()
        line = f"{size}^3 round {rnd}: op call {op_ms * 1e3:6.1f} us (device events), replayed {rep_ms * 1e3:6.1f} us, host {host_us:5.1f} us/call"
        if case.peer is not None:
            pk = measure.device_ms(peers.clock(), case.peer, repeat=7, warmup=2, batch=50)
            peers.sync(); t0 = time.perf_counter()
            for _ in range(200):
                case.peer()
            phost = (time.perf_counter() - t0) / 200 * 1e6; peers.sync()
            line += f" | CLBlast {pk * 1e3:6.1f} us, host {phost:5.1f} us/call"
        print(line, flush=True)
