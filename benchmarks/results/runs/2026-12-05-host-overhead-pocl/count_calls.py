"""Python function calls (and C calls) per library call, op layer and launcher: sys.setprofile counts."""
import sys, json, numpy as np, isthmus
from isthmus import ops
dev = isthmus.device("opencl:0")
rng = np.random.default_rng(0)
v = lambda *s: dev.asarray(rng.random(s).astype(np.float32))
x, y, m, a, b = v(1024), v(1024), v(8, 32), v(16, 16), v(16, 16)
so, mo, to, go = ops.sum(x), ops.softmax(m), ops.transpose(m), ops.gemm(a, b)
cases = {"axpy": lambda: ops.axpy(2.0, x, y), "scale": lambda: ops.scale(2.0, x), "scale out=": lambda: ops.scale(2.0, x, out=y),
 "softmax": lambda: ops.softmax(m), "softmax out=": lambda: ops.softmax(m, out=mo), "transpose": lambda: ops.transpose(m),
 "transpose out=": lambda: ops.transpose(m, out=to), "gemm": lambda: ops.gemm(a, b), "gemm out=": lambda: ops.gemm(a, b, go),
 "sum": lambda: ops.sum(x), "sum out=": lambda: ops.sum(x, out=so), "max": lambda: ops.max(x), "max out=": lambda: ops.max(x, out=so)}
res = {}
for name, fn in cases.items():
    for _ in range(10): fn()
    dev.synchronize()
    n = {"py": 0, "c": 0}
    def prof(frame, event, arg):
        if event == "call": n["py"] += 1
        elif event == "c_call": n["c"] += 1
    sys.setprofile(prof)
    for _ in range(100): fn()
    sys.setprofile(None)
    res[name] = (n["py"] / 100, n["c"] / 100)
print(json.dumps(res))
