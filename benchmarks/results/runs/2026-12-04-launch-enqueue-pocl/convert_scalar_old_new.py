import importlib.util, sys, time, json
import numpy as np
sys.path.insert(0, "/work/wt-backends/python")
from isthmus import signature as new
spec = importlib.util.spec_from_file_location("isthmus.signature_old", "/work/main/python/isthmus/signature.py")
old = importlib.util.module_from_spec(spec); sys.modules["isthmus.signature_old"] = old; spec.loader.exec_module(old)
res = {}
for mod in (old, new):
    pl = mod.Param("n", "scalar", "long", np.dtype(np.int64), False)
    pf = mod.Param("a", "scalar", "float", np.dtype(np.float32), False)
    n32, a64 = np.int32(256), np.float64(0.5)
    N = 20000
    ts = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(N):
            mod.convert_scalar(n32, pl, "w"); mod.convert_scalar(a64, pf, "w")
        ts.append((time.perf_counter() - t0) / N * 1e6)
    res["old" if mod is old else "new"] = round(sorted(ts)[4], 2)
print(json.dumps({"us per call converting (np.int32 -> long, np.float64 -> float)": res}))
