"""A/B in one process: an op from Java through OpHandle.call4 (slots) and through the former
per-arity shapes (call1, call3, call1Into: the same Python bodies behind the same spi gate).

    python benchmarks/results/runs/2026-12-04-java-op-slots-pocl/slots_ab.py ROUNDS ITERS
"""
import statistics, subprocess, sys
import numpy as np
import isthmus, isthmus.java
from isthmus.java.jvm import packaged_jar
import pathlib, tempfile
OUT = tempfile.mkdtemp()
subprocess.run(["javac", "-nowarn", "-cp", str(packaged_jar()), "-d", OUT, str(pathlib.Path(__file__).with_name("SlotsAB.java"))], check=True)
isthmus.java.start(classpath=[OUT])
import jpype
from isthmus.java.spi import ops
from isthmus.java.spi.proxy import implements
from isthmus.java.spi.ops import arg, run

@implements("io.isthmus.SlotsAB$PerArity")
class PerArity:  # the former OpHandle.call1/call3/call1Into bodies, behind the same spi gate
    def call1(self, op, a):
        return run(op._function(), (arg(a),), (a,), None)
    def call3(self, op, a, b, c):
        return run(op._function(), (arg(a), arg(b), arg(c)), (a, b, c), None)
    def call1Into(self, op, a, jout):
        return run(op._function(), (arg(a),), (a,), jout)

old = PerArity()
ab = jpype.JClass("io.isthmus.SlotsAB")
dev = isthmus.device()
host = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
x, o = dev.asarray(host), dev.zeros((8, 8), np.float32)
jx, jo = isthmus.java.to_java(x), isthmus.java.to_java(o)
reps, iters = int(sys.argv[1]), int(sys.argv[2])
cases = ("softmax", "sum", "transpose", "axpy", "softmax out=")
res = {c: {"per-arity": [], "slots": []} for c in cases}
for r in range(reps):
    for c in cases:
        order = (False, True) if r % 2 == 0 else (True, False)
        for slots in order:
            res[c]["slots" if slots else "per-arity"].append(float(ab.cpuNs(old, c, slots, jx, jo, iters)) / 1000)
print("| op | CPU per-arity | CPU slots | slots vs per-arity (median of per-round ratios) |\n|---|---|---|---|")
for c, v in res.items():
    ratio = statistics.median(s / p for s, p in zip(v["slots"], v["per-arity"]))
    f = lambda xs: f"{statistics.median(xs):.2f} [{min(xs):.2f}..{max(xs):.2f}]"
    print(f"| {c} | {f(v['per-arity'])} | {f(v['slots'])} | {(ratio - 1) * 100:+.1f}% |")
