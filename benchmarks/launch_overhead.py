"""Host cost per launch of a tiny kernel: isthmus eager call vs Plan vs Graph replay, next to the
backend's own calls (PyOpenCL kernel call and pre-set enqueue; CuPy RawKernel, the raw driver call
with pre-packed arguments, a CuPy-captured CUDA graph), all in one run on one device.

    python -m benchmarks launch_overhead [--device ID] [--out DIR] [--launches N] [--graph-size G] [--java]

Each path runs rounds of N back-to-back launches (``isthmus.measure.per_call_times``); the host
time of the loop (without the final synchronize) divided by N is the cost per launch; the median
round is reported with the spread of the rounds. ``--out``: the report
(``launch_overhead-<backend>-<device>.{md,json}``).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = ["--quick", "--java", "--out", "{out}"]
REPO = Path(__file__).resolve().parents[1]
SOURCE = """__kernel void tiny(const long n, const float a, __global float* y)
{
    const long i = get_global_id(0);
    if (i < n) y[i] = a * y[i] + 1.0f;
}
"""
N_ELEMS = 256


def run(dev, launches: int, rounds: int, graph_size: int, java: bool = False) -> tuple[list[dict], list[str]]:
    import isthmus

    k = dev.compile(SOURCE, "tiny")
    y = dev.zeros(N_ELEMS, np.float32)
    cfg = isthmus.LaunchConfig((N_ELEMS,), (64,))
    plan = k.prepare(N_ELEMS, 0.5, y, config=cfg)
    with dev.capture() as graph:
        for _ in range(graph_size):
            plan.launch()
    sync = dev.synchronize
    paths = [("isthmus eager call", lambda: k(N_ELEMS, 0.5, y, config=cfg), 1),
             ("isthmus Plan.launch", plan.launch, 1),
             (f"isthmus Graph.launch ({graph_size} kernels), per kernel", graph.launch, graph_size)]
    if dev.backend == "cuda":
        paths += _cuda_paths(dev, y, plan, graph_size)
        base = "CuPy RawKernel call"
    else:
        paths += _opencl_paths(dev, k, y)
        base = "PyOpenCL kernel call"
    rows = []
    for name, fn, per in paths:
        n = max(1, launches // per) if per > 1 else launches
        t = measure.per_call_times(fn, n, sync, rounds=rounds, warmup=min(n, 200), per_call=per)
        rows.append({"path": name, "us_per_launch": t.median, "spread": t.spread})
    if java:
        rows += _java_rows(dev, launches, rounds, graph_size)
    ref = next(r["us_per_launch"] for r in rows if r["path"] == base)
    for r in rows:
        r["x_" + base.split()[0].lower()] = r["us_per_launch"] / ref
    plan_ratio = next(r["us_per_launch"] for r in rows if r["path"] == "isthmus Plan.launch") / ref
    notes = [f"tiny kernel (n={N_ELEMS}), {rounds} rounds of {launches} launches per path (graphs: "
             f"{max(1, launches // graph_size)} replays of {graph_size} kernels), median round, host time of the "
             f"launch loop without the final synchronize",
             f"Plan.launch / {base}: {plan_ratio:.2f}x"]
    if dev.backend == "cuda":
        notes.append(f"target (GPU): prepared launch <= 0.6x CuPy RawKernel: {'met' if plan_ratio <= 0.6 else 'NOT met'}")
    if java:
        jplan = next(r["us_per_launch"] for r in rows if r["path"] == "Java Plan.launch (isthmus thread)")
        jgraph = next(r["us_per_launch"] for r in rows if r["path"].startswith("Java Graph.launch"))
        notes.append(f"Java (isthmus executor thread): Plan.launch / {base}: {jplan / ref:.2f}x"
                     + (f" (target <= 0.9x: {'met' if jplan / ref <= 0.9 else 'NOT met'})" if dev.backend == "cuda" else "")
                     + f"; graph replay {jgraph:.2f} us per kernel"
                     + (f" (target <= 1.5 us: {'met' if jgraph <= 1.5 else 'NOT met'})" if dev.backend == "cuda" else ""))
    return rows, notes


def _java_rows(dev, launches: int, rounds: int, graph_size: int) -> list[dict]:
    """The same three isthmus paths from Java, each loop on an isthmus executor thread."""
    from benchmarks._jvm import start_jvm

    jpype = start_jvm("LaunchBench")

    bench = jpype.JClass("io.isthmus.bench.LaunchBench")
    jdev = jpype.JClass("io.isthmus.Isthmus").get().device(dev.id)
    kernel = jdev.compile(SOURCE, "tiny", None)
    y = jdev.allocate(jpype.JClass("io.isthmus.DType").FLOAT32, jpype.JLong(N_ELEMS))
    cfg = jpype.JClass("io.isthmus.LaunchConfig")(jpype.JArray(jpype.JLong)([N_ELEMS]), jpype.JArray(jpype.JLong)([64]))
    n, a = jpype.JLong(N_ELEMS), jpype.JFloat(0.5)
    java_code = jpype.JClass("io.isthmus.bench.LaunchBenchBodies")
    plan = java_code.prepare(kernel, cfg, n, a, y)
    graph = jdev.capture(java_code.repeat(plan, graph_size))
    rows = []
    for name, body, per in [("Java eager Kernel.launch (isthmus thread)", java_code.eager(kernel, cfg, n, a, y), 1),
                            ("Java Plan.launch (isthmus thread)", java_code.plan(plan), 1),
                            (f"Java Graph.launch ({graph_size} kernels, isthmus thread), per kernel",
                             java_code.graph(graph), graph_size)]:
        calls = max(1, launches // per)
        rows.append({"path": name, "us_per_launch": float(bench.perCallNs(jdev, body, calls, rounds)) / per / 1e3})
    graph.close()
    plan.close()
    y.close()
    return rows


def _cuda_paths(dev, y, plan, graph_size):
    import cupy

    prelude = (REPO / "opencl" / "cuda_prelude.h").read_text()
    with dev._cp_device:
        rk = cupy.RawKernel(prelude + "\n" + SOURCE, "tiny", options=("-std=c++17",))
        yc = dev._cupy_view(y)
        args = (np.int64(N_ELEMS), np.float32(0.5), yc)
        stream = dev.stream
        grid, block = (N_ELEMS // 64,), (64,)

        def raw_kernel():
            rk(grid, block, args, stream=stream)

        raw_kernel()
        stream.synchronize()
        launch_kernel = cupy.cuda.driver.launchKernel
        packed = plan._native._args

        def driver_call():
            launch_kernel(*packed)

        capture_stream = cupy.cuda.Stream(non_blocking=True)
        with capture_stream:
            capture_stream.begin_capture()
            for _ in range(graph_size):
                rk(grid, block, args, stream=capture_stream)
            cgraph = capture_stream.end_capture()

        def cupy_graph():
            cgraph.launch(stream)

    enqueue = plan._native.enqueue
    return [("isthmus Plan, driver call (no graph: ISTHMUS_CUDA_LAUNCH_GRAPHS=0)", enqueue, 1),
            ("CuPy RawKernel call", raw_kernel, 1),
            ("cupy.cuda.driver.launchKernel, pre-packed args", driver_call, 1),
            (f"CuPy-captured CUDA graph ({graph_size} kernels), per kernel", cupy_graph, graph_size)]


def _opencl_paths(dev, k, y):
    import pyopencl as cl

    queue = dev.queue
    knl = cl.Kernel(k.program.native, "tiny")
    args = (np.int64(N_ELEMS), np.float32(0.5), y._mem.cl)

    def kernel_call():
        knl(queue, (N_ELEMS,), (64,), *args)

    pre = cl.Kernel(k.program.native, "tiny")
    pre.set_args(*args)

    def enqueue():
        cl.enqueue_nd_range_kernel(queue, pre, (N_ELEMS,), (64,))

    return [("PyOpenCL kernel call", kernel_call, 1), ("PyOpenCL enqueue, args set once", enqueue, 1)]


def main(argv=None) -> int:
    import isthmus

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best available)")
    ap.add_argument("--out", default=None, help="folder for launch_overhead-<backend>-<device>.md/.json")
    _results.add_run_option(ap)
    ap.add_argument("--tag", default="", help="suffix of the result file names")
    ap.add_argument("--launches", type=int, default=None, help="launches per round (default 20000 GPU, 5000 CPU)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--graph-size", type=int, default=100)
    ap.add_argument("--java", action="store_true", help="also from Java (needs `make jar`)")
    ap.add_argument("--quick", action="store_true", help="200 launches, 3 rounds, graphs of 10 (a smoke test)")
    a = ap.parse_args(argv)
    if a.quick:
        a.launches, a.rounds, a.graph_size = 200, 3, 10
    dev = isthmus.device(a.device)
    launches = a.launches or (20000 if dev.kind == "gpu" else 5000)
    rows, notes = run(dev, launches, a.rounds, a.graph_size, a.java)
    extra = {}
    if a.java:
        from benchmarks._jvm import java_version, start_jvm

        extra["java"] = java_version(start_jvm("LaunchBench"))
    report = measure.Report("launch_overhead", f"launch_overhead on {dev.id} ({dev.name}, {dev.vendor})", dev,
                            data={"rows": rows}, notes=notes, extra=extra)
    report.add_records(rows, ["path", "us_per_launch", "spread"] + [c for c in rows[0] if c.startswith("x_")])
    print(report.markdown())
    _results.write(report, a.out, a.tag, a.run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
