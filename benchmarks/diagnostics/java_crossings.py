"""Host time per library call from Java (io.isthmus.Ops) before and after issue 12's one crossing
per op, two ways:

- in one process (default): the generic ``Runtime.op(name, Object[], out, options)`` crossing
  and the path now (``Ops``: one call on the op's handle, arguments in its slots) timed in turn,
  several rounds, so drift on a shared machine hits all alike (the per-op SPI methods measured
  as "old" in issue 12 are gone since issue 25);
- with ``--base DIR``: in alternating processes, one running a base checkout's Python package and
  jar, the next this checkout's (the whole old code, but process-to-process noise is larger).

    python -m benchmarks java_crossings [--reps 7] [--iters 2000] [--out FILE.md]
    python -m benchmarks java_crossings --base DIR [--reps 5] [--iters 3000] [--out FILE.md]

DIR is a checkout of the base commit whose jar is built into python/isthmus/java/lib
(`git archive BASE | tar x -C DIR && cd DIR && mvn package -DskipTests && cp target/isthmus-*.jar
python/isthmus/java/lib/`). Each process starts the JVM with a small Java class (compiled here
against that side's jar, public API only) that times a loop of calls from the thread Python
started, and prints one JSON line. Also measured, as the floor, the same op called from Python.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

SMOKE = "compiles Java against jars and starts JVM processes: minutes, not a smoke test"

REPO = Path(__file__).resolve().parents[2]

JAVA = r"""
import io.isthmus.*;

public final class CrossingsBench {
    private CrossingsBench() {
    }

    /**
     * Nanoseconds per call of {@code what} over {@code iters} calls after a warm-up: wall time, and
     * CPU time of the calling thread (the host cost of the call itself, which other processes on
     * a shared machine do not inflate; the device's work runs on the driver's threads).
     */
    public static double[] time(String what, DeviceBuffer x, DeviceBuffer y, DeviceBuffer out, int iters) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int i = 0; i < iters / 10 + 10; i++) {
            once(what, x, y, out);
        }
        x.device().synchronize();
        long c0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            once(what, x, y, out);
        }
        x.device().synchronize();
        long t1 = System.nanoTime();
        long c1 = mx.getCurrentThreadCpuTime();
        return new double[] {(t1 - t0) / (double) iters, (c1 - c0) / (double) iters};
    }

    private static void once(String what, DeviceBuffer x, DeviceBuffer y, DeviceBuffer out) {
        switch (what) {
            case "softmax" -> Ops.softmax(x).close();
            case "sum" -> Ops.sum(x).close();
            case "transpose" -> Ops.transpose(x).close();
            case "gemm" -> Ops.gemm(x, y).close();
            case "axpy" -> Ops.axpy(0.5, x, y);
            //OUT case "softmax out=" -> Ops.softmax(x, out);
            default -> throw new IllegalArgumentException(what);
        }
    }
}
"""

CASES = ("softmax", "sum", "transpose", "gemm", "axpy", "softmax out=")

# The path before, next to the path now: in package io.isthmus to reach the runtime's SPI.
JAVA_PAIRS = r"""
package io.isthmus;

import io.isthmus.spi.Runtime;

import java.util.Map;

public final class CrossingsPairs {
    private static final Map<String, Object> NONE = null;

    private CrossingsPairs() {
    }

    /**
     * {wall, calling-thread CPU} nanoseconds per call of {@code what} by path {@code side}: "generic", {@code Runtime.op(name,
     * Object[], out, options)} as {@code Ops} called it until the op handles; "new", {@code Ops}.
     */
    public static double[] time(String what, String side, DeviceBuffer x, DeviceBuffer y, DeviceBuffer out,
                                int iters) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        Runtime rt = Isthmus.get().runtime();
        for (int i = 0; i < iters / 10 + 10; i++) {
            once(rt, what, side, x, y, out);
        }
        x.device().synchronize();
        long c0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            once(rt, what, side, x, y, out);
        }
        x.device().synchronize();
        long t1 = System.nanoTime();
        long c1 = mx.getCurrentThreadCpuTime();
        return new double[] {(t1 - t0) / (double) iters, (c1 - c0) / (double) iters};
    }

    private static void once(Runtime rt, String what, String side, DeviceBuffer x, DeviceBuffer y, DeviceBuffer out) {
        switch (side) {
            case "generic" -> generic(rt, what, x, y, out);
            default -> now(what, x, y, out);
        }
    }

    private static void generic(Runtime rt, String what, DeviceBuffer x, DeviceBuffer y, DeviceBuffer out) {
        switch (what) {
            case "softmax", "sum", "transpose" ->
                OpCall.result(rt.op(what, Kernel.handles(new Object[] {x}), null, NONE), new Object[] {x}, null).close();
            case "gemm" ->
                OpCall.result(rt.op(what, Kernel.handles(new Object[] {x, y}), null, NONE), new Object[] {x, y}, null)
                        .close();
            case "axpy" -> OpCall.result(rt.op(what, Kernel.handles(new Object[] {0.5, x, x}), null, NONE),
                                         new Object[] {0.5, x, x}, null);
            case "softmax out=" -> OpCall.result(rt.op("softmax", Kernel.handles(new Object[] {x}), out.handle(), NONE),
                                                 new Object[] {x}, out);
            default -> throw new IllegalArgumentException(what);
        }
    }

    private static void now(String what, DeviceBuffer x, DeviceBuffer y, DeviceBuffer out) {
        switch (what) {
            case "softmax" -> Ops.softmax(x).close();
            case "sum" -> Ops.sum(x).close();
            case "transpose" -> Ops.transpose(x).close();
            case "gemm" -> Ops.gemm(x, y).close();
            case "axpy" -> Ops.axpy(0.5, x, y);
            case "softmax out=" -> Ops.softmax(x, out);
            default -> throw new IllegalArgumentException(what);
        }
    }
}
"""
PAIR_CASES = ("softmax", "sum", "transpose", "gemm", "axpy", "softmax out=")
SIDES = ("generic", "new")


def in_process(reps: int, iters: int, cases: tuple = PAIR_CASES) -> dict:
    """The Java paths timed in turn in this process, the order rotating every round:
    {case: {"generic"|"new": [(wall, cpu)...]}}."""
    import numpy as np

    import isthmus
    import isthmus.java
    from isthmus.java.jvm import packaged_jar

    tmp = tempfile.mkdtemp()
    src = Path(tmp) / "io" / "isthmus" / "CrossingsPairs.java"
    src.parent.mkdir(parents=True)
    src.write_text(JAVA_PAIRS)
    subprocess.run(["javac", "-nowarn", "-cp", str(packaged_jar()), "-d", tmp, str(src)], check=True,
                   capture_output=True)
    isthmus.java.start(classpath=[tmp])
    import jpype

    pairs = jpype.JClass("io.isthmus.CrossingsPairs")
    dev = isthmus.device()
    host = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    x, y, o = dev.asarray(host), dev.asarray(host), dev.zeros((8, 8), np.float32)
    jx, jy, jo = (isthmus.java.to_java(b) for b in (x, y, o))
    out = {"device": dev.id, "device_name": dev.name,
           "cases": {c: {s: [] for s in SIDES if s != "old" or "out=" not in c} for c in cases}}
    for rep in range(reps):
        for case in cases:
            sides = list(out["cases"][case])
            for side in sides[rep % len(sides):] + sides[:rep % len(sides)]:
                wall, cpu = pairs.time(case, side, jx, jy, jo, iters)
                out["cases"][case][side].append((float(wall), float(cpu)))
        print(f"round {rep + 1}/{reps}: " + ", ".join(
            f"{c} " + " / ".join(f"{v[-1][1] / 1000:.1f}" for v in out["cases"][c].values()) + " us"
            for c in cases), flush=True)
    for j in (jx, jy, jo):
        j.close()
    return out


def _stat(vals: list) -> tuple:
    return statistics.median(vals), min(vals), max(vals)


def in_process_report(res: dict, reps: int, iters: int) -> str:
    lines = ["# Java library calls: host time per call by path (issue 12)", "",
             f"machine {platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"shared with other jobs), python {platform.python_version()}, device {res['device']} "
             f"({res['device_name']}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"`python -m benchmarks java_crossings --reps {reps} --iters {iters}"
             f"{'' if tuple(res['cases']) == PAIR_CASES else ' --cases ' + ','.join(res['cases'])}`: one process; "
             "per round and op, "
             f"{iters} calls by each path in turn, the order rotating every round, {reps} rounds. "
             "Old: the typed SPI method per op from before issue 12, then the result's shape and dtype asked in "
             "one crossing each (what the old `Ops.softmax` and `DeviceBuffer.wrap` did; those SPI methods remain, "
             "deprecated). Generic: `Runtime.op(name, Object[] args, out, options)`, one crossing (what `Ops` "
             "called until the op handles). Now: `Ops.softmax(x)`, one call on the op's handle (resolved once per "
             "name), arguments as parameters. A loop in Java on the thread Python started, an 8x8 float32 input, "
             "every new result closed (one more crossing each, all paths). CPU time of the calling thread (the "
             "host cost of the call), median over rounds, min..max in brackets, microseconds per call; the change "
             "is the median over rounds of now/old (now/generic) in the same round.", "",
             "| op | CPU old | CPU generic | CPU now | now vs old | now vs generic | wall old | wall generic | wall now |",
             "|---|---|---|---|---|---|---|---|---|"]
    for case, sides in res["cases"].items():
        def cpu(side):
            if side not in sides:
                return "n/a"
            m, lo, hi = _stat([v[1] / 1000 for v in sides[side]])
            return f"{m:.1f} [{lo:.1f}..{hi:.1f}]"

        def wall(side):
            return f"{_stat([v[0] / 1000 for v in sides[side]])[0]:.1f}" if side in sides else "n/a"

        def change(base):
            if base not in sides:
                return ""
            return f"{(statistics.median(n[1] / b[1] for n, b in zip(sides['new'], sides[base])) - 1) * 100:+.0f}%"
        lines.append(f"| {case} | {cpu('old')} | {cpu('generic')} | {cpu('new')} | {change('old')} | "
                     f"{change('generic')} | {wall('old')} | {wall('generic')} | {wall('new')} |")
    return "\n".join(lines) + "\n"


def child(iters: int) -> None:
    """One process: time every case from Java and from Python, print one JSON line."""
    import numpy as np

    import isthmus
    import isthmus.java
    from isthmus.java.jvm import packaged_jar

    jar = packaged_jar()
    with zipfile.ZipFile(jar) as z:  # Ops.softmax(x, out) came with the change measured here
        has_out = "io/isthmus/LibraryKernel.class" in z.namelist()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "CrossingsBench.java").write_text(JAVA.replace("//OUT ", "") if has_out else JAVA)
        subprocess.run(["javac", "-nowarn", "-cp", str(jar), "-d", tmp, str(Path(tmp) / "CrossingsBench.java")],
                       check=True)
        isthmus.java.start(classpath=[tmp])
        import jpype

        bench = jpype.JClass("CrossingsBench")
        dev = isthmus.device()
        host = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
        x, y, out = dev.asarray(host), dev.asarray(host), dev.zeros((8, 8), np.float32)
        jx, jy, jout = (isthmus.java.to_java(b) for b in (x, y, out))
        result = {"isthmus": str(Path(isthmus.__file__).parent), "jar": str(jar), "device": dev.id,
                  "device_name": dev.name, "java": {}, "python": {}, "java_cpu": {}, "python_cpu": {}}
        py = {"softmax": lambda: isthmus.ops.softmax(x).close(), "sum": lambda: isthmus.ops.sum(x).close(),
              "transpose": lambda: isthmus.ops.transpose(x).close(), "gemm": lambda: isthmus.ops.gemm(x, y).close(),
              "axpy": lambda: isthmus.ops.axpy(0.5, x, y), "softmax out=": lambda: isthmus.ops.softmax(x, out=out)}
        for case in CASES:
            if has_out or case != "softmax out=":
                wall, cpu = bench.time(case, jx, jy, jout, iters)
                result["java"][case], result["java_cpu"][case] = float(wall), float(cpu)
            fn = py[case]
            for _ in range(iters // 10 + 10):
                fn()
            dev.synchronize()
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(iters):
                fn()
            dev.synchronize()
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            result["python"][case], result["python_cpu"][case] = (t1 - t0) / iters, (c1 - c0) / iters
        for j in (jx, jy, jout):
            j.close()
    print("RESULT " + json.dumps(result), flush=True)


def run_side(tree: Path, iters: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree / "python"), ISTHMUS_KERNEL_DIR=str(tree / "opencl"))
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--iters", str(iters)],
                       capture_output=True, text=True, env=env, timeout=900, cwd=tempfile.gettempdir())
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if p.returncode != 0 or line is None:
        raise SystemExit(f"the run on {tree} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def _table(runs: dict, java: str, python: str) -> list[str]:
    lines = ["| op | Java before | Java after | change | Python before | Python after |", "|---|---|---|---|---|---|"]
    for case in CASES:
        def col(side, lang):
            vals = [r[lang][case] / 1000 for r in runs[side] if case in r[lang]]
            return (statistics.median(vals), min(vals), max(vals)) if vals else None

        def cell(c):
            return "n/a" if c is None else f"{c[0]:.1f} [{c[1]:.1f}..{c[2]:.1f}]"
        jb, ja, pb, pa = col("before", java), col("after", java), col("before", python), col("after", python)
        change = "" if jb is None else f"{(ja[0] - jb[0]) / jb[0] * 100:+.0f}%"
        lines.append(f"| {case} | {cell(jb)} | {cell(ja)} | {change} | {pb[0]:.1f} | {pa[0]:.1f} |")
    return lines


def report(runs: dict, reps: int, iters: int) -> str:
    first = runs["after"][0]
    lines = ["# Java library calls: host time per call before/after one crossing per op (issue 12)", "",
             f"machine {platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"shared with other jobs), python {platform.python_version()}, device {first['device']} "
             f"({first['device_name']}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"`python -m benchmarks java_crossings --base DIR --reps {reps} --iters {iters}`: {reps} before and "
             f"{reps} after processes, alternating; each times {iters} calls per case from Java (a loop in Java "
             "on the thread Python started, an 8x8 float32 input, every result closed: `Ops.softmax(x).close()`) "
             "and the same calls from Python (`isthmus.ops.softmax(x).close()`). Median over processes, "
             "min..max in brackets, microseconds per call.", "",
             "## CPU time of the calling thread per call (the host cost of the call)", "",
             *_table(runs, "java_cpu", "python_cpu"), "",
             "## Wall time per call (includes waiting for a core on the shared machine)", "",
             *_table(runs, "java", "python")]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, help="compare with this checkout of the base commit (its jar built), "
                   "in alternating processes")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--iters", type=int, default=3000)
    p.add_argument("--out", type=Path, default=None, help="markdown report (default: print it)")
    p.add_argument("--cases", default=",".join(PAIR_CASES), help="in one process: these ops only (comma-separated)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.iters)
        return
    if args.base is None:
        res = in_process(args.reps, args.iters, tuple(args.cases.split(",")))
        text = in_process_report(res, args.reps, args.iters)
        if args.out:
            args.out.write_text(text + "\n<!-- raw: " + json.dumps(res) + " -->\n")
        print(text)
        return
    runs: dict[str, list] = {"before": [], "after": []}
    for rep in range(args.reps):
        for side, tree in (("before", args.base.resolve()), ("after", REPO)):
            runs[side].append(run_side(tree, args.iters))
            print(f"rep {rep + 1}/{args.reps} {side}: " + ", ".join(
                f"{c} {t / 1000:.1f} us" for c, t in runs[side][-1]["java_cpu"].items()), flush=True)
    text = report(runs, args.reps, args.iters)
    if args.out:
        args.out.write_text(text + "\n<!-- raw: " + json.dumps(runs) + " -->\n")
    print(text)


if __name__ == "__main__":
    main()
