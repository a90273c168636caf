"""What one Java -> Python call costs by the kind of its parameters (JPype proxies), and what
reading the elements of a Java ``Object[]`` in Python costs: why ``OpHandle.call4`` passes an
op's arguments as parameters of their own (slots, the unused ones null) rather than in an array,
and what its unused slots and count cost against one parameter per argument.

    python -m benchmarks jpype_params [--reps 7] [--iters 3000]

A Java interface with one method per kind of parameter is implemented in Python by methods that
do nothing (``arr+read`` and ``arr+read3`` also read the array's elements); a loop in Java calls
one method ``iters`` times on the thread Python started; CPU time of that thread, the kinds taken
in turn, the order reversed every round; median over rounds, microseconds per call.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

SMOKE = "compiles a Java class against the jar and needs the JVM of its own process: not a smoke test"

JAVA = r"""
import io.isthmus.spi.BufferHandle;

public final class ParamProbe {
    private ParamProbe() {
    }

    /** One method per kind of parameter; Python implements them. */
    public interface Target {
        void none();
        void primitive(double a);
        void handle(BufferHandle a);
        void boxed(Object a);
        void string(String a);
        void nul(Object a);
        void array(Object[] a);
        void arrayRead(Object[] a);
        void typed3(double a, BufferHandle b, BufferHandle c);
        void objects3(Object a, Object b, Object c);
        void arrayRead3(Object[] a);
        void objects1(Object a);
        void slots(int count, Object a, Object b, Object c, Object d, BufferHandle out);
        void slotsNoCount(Object a, Object b, Object c, Object d, BufferHandle out);
    }

    /** CPU nanoseconds of the calling thread per call of {@code kind}. */
    public static double time(Target t, String kind, BufferHandle h, int iters) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int i = 0; i < iters / 10 + 10; i++) {
            once(t, kind, h);
        }
        long c0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < iters; i++) {
            once(t, kind, h);
        }
        return (mx.getCurrentThreadCpuTime() - c0) / (double) iters;
    }

    private static void once(Target t, String kind, BufferHandle h) {
        switch (kind) {
            case "none" -> t.none();
            case "double" -> t.primitive(0.5);
            case "handle" -> t.handle(h);
            case "Double as Object" -> t.boxed(0.5);
            case "String" -> t.string("axpy");
            case "null" -> t.nul(null);
            case "Object[3]" -> t.array(new Object[] {0.5, h, h});
            case "Object[3] + read" -> t.arrayRead(new Object[] {0.5, h, h});
            case "double, handle, handle" -> t.typed3(0.5, h, h);
            case "Object x3 (Double, handle, handle)" -> t.objects3(0.5, h, h);
            case "Object[] {Double, handle, handle} + read" -> t.arrayRead3(new Object[] {0.5, h, h});
            case "Object (handle)" -> t.objects1(h);
            case "slots: int, handle, null x4" -> t.slots(1, h, null, null, null, null);
            case "slots, no count: handle, null x4" -> t.slotsNoCount(h, null, null, null, null);
            case "slots: int, Double, handle, handle, null x2" -> t.slots(3, 0.5, h, h, null, null);
            default -> throw new IllegalArgumentException(kind);
        }
    }
}
"""

KINDS = ("none", "double", "handle", "Double as Object", "String", "null", "Object[3]", "Object[3] + read",
         "double, handle, handle", "Object x3 (Double, handle, handle)", "Object[] {Double, handle, handle} + read",
         "Object (handle)", "slots: int, handle, null x4", "slots, no count: handle, null x4",
         "slots: int, Double, handle, handle, null x2")


def _target(jpype):
    @jpype.JImplements("ParamProbe$Target")
    class Target:
        @jpype.JOverride
        def none(self):
            pass

        @jpype.JOverride
        def primitive(self, a):
            pass

        @jpype.JOverride
        def handle(self, a):
            pass

        @jpype.JOverride
        def boxed(self, a):
            pass

        @jpype.JOverride
        def string(self, a):
            pass

        @jpype.JOverride
        def nul(self, a):
            pass

        @jpype.JOverride
        def array(self, a):
            pass

        @jpype.JOverride
        def arrayRead(self, a):
            a[0], a[1], a[2]

        @jpype.JOverride
        def typed3(self, a, b, c):
            pass

        @jpype.JOverride
        def objects3(self, a, b, c):
            pass

        @jpype.JOverride
        def arrayRead3(self, a):
            a[0], a[1], a[2]

        @jpype.JOverride
        def objects1(self, a):
            pass

        @jpype.JOverride
        def slots(self, count, a, b, c, d, out):
            pass

        @jpype.JOverride
        def slotsNoCount(self, a, b, c, d, out):
            pass
    return Target()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--iters", type=int, default=3000)
    args = p.parse_args(argv)
    import numpy as np

    import isthmus
    import isthmus.java
    from isthmus.java.jvm import packaged_jar

    tmp = tempfile.mkdtemp()
    (Path(tmp) / "ParamProbe.java").write_text(JAVA)
    subprocess.run(["javac", "-nowarn", "-cp", str(packaged_jar()), "-d", tmp, str(Path(tmp) / "ParamProbe.java")],
                   check=True, capture_output=True)
    isthmus.java.start(classpath=[tmp])
    import jpype

    probe = jpype.JClass("ParamProbe")
    target = _target(jpype)
    x = isthmus.device().asarray(np.ones(4, np.float32))
    jx = isthmus.java.to_java(x)
    handle = jpype.JClass("io.isthmus.Interop").handle(jx)
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    for rep in range(args.reps):
        for kind in KINDS if rep % 2 == 0 else KINDS[::-1]:
            times[kind].append(float(probe.time(target, kind, handle, args.iters)) / 1000)
    base = statistics.median(times["none"])
    print(f"`python -m benchmarks jpype_params --reps {args.reps} --iters {args.iters}` (JPype {jpype.__version__})\n")
    print("| parameters | us per call | more than none |\n|---|---|---|")
    for kind, vals in times.items():
        m = statistics.median(vals)
        print(f"| {kind} | {m:.2f} [{min(vals):.2f}..{max(vals):.2f}] | {m - base:+.2f} |")
    jx.close()
    x.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
