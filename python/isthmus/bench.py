"""``isthmus bench``: the kernel library against what a user would otherwise call, in one run.

For every library kernel: achieved GB/s or GFLOP/s (device events, median of repeats), next to
the direct PyOpenCL / CuPy ``RawKernel`` call of the very same compiled kernel with the same
arguments (recorded from the library call and replayed), the vendor library where there is one
(CuPy / cuBLAS on CUDA) and NumPy on the host; a device-to-device copy gives the bandwidth
ceiling. Host overhead per call is measured on tiny problems for the library call and the direct
call. Results go to ``benchmarks/results/`` as JSON plus a markdown table.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import platform
import socket
from pathlib import Path

import numpy as np

from . import __version__
from .buffer import Buffer
from .kernel import Kernel
from .measure import device_ms, host_ms, per_call_us
from .workloads import sizes_for, standard, tolerance


@contextlib.contextmanager
def recording():
    """Record every (kernel, global, local, packed args) a library call enqueues; buffers closed
    meanwhile stay alive so the recording can be replayed safely."""
    launches, kept = [], []
    enqueue, close = Kernel._enqueue, Buffer.close

    def record(self, g, loc, packed):
        launches.append((self, g, loc, list(packed)))
        enqueue(self, g, loc, packed)

    Kernel._enqueue = record
    Buffer.close = lambda self: kept.append(self)
    try:
        yield launches
    finally:
        Kernel._enqueue, Buffer.close = enqueue, close


class DirectCalls:
    """The same launches made straight through PyOpenCL or CuPy, as a user without isthmus would."""

    def __init__(self, dev, launches):
        self.dev = dev
        self.calls = []
        if dev.backend == "opencl":
            import pyopencl as cl

            for k, g, loc, packed in launches:
                native = cl.Kernel(k.program.native, k.name)  # an independent kernel object
                self.calls.append((native, g, loc, packed))
        else:
            import cupy

            for k, g, loc, packed in launches:
                from .kernel import _options

                from .backends.cuda import defines_as_source

                src = defines_as_source(_options(k.program.defines)) + dev._prepare_source(k.program.source)
                raw = cupy.RawKernel(src, k.name, options=tuple(dev._nvrtc_options()))
                block = loc
                grid = tuple(a // b for a, b in zip(g, block))
                self.calls.append((raw, grid, block, packed))

    def __call__(self):
        if self.dev.backend == "opencl":
            q = self.dev.queue
            for native, g, loc, packed in self.calls:
                native(q, g, loc, *packed)
        else:
            s = self.dev.stream
            for raw, grid, block, packed in self.calls:
                raw(grid, block, packed, stream=s)


def _vendor(dev, w, args):
    """The vendor-library call a CUDA user would make (CuPy / cuBLAS), or None."""
    if dev.backend != "cuda":
        return None
    import cupy

    views = [dev._cupy_view(a) for a in args]
    fns = {
        "axpy": lambda: views[1].__iadd__(2.0 * views[0]),
        "sum": lambda: views[0].sum(),
        "max": lambda: views[0].max(),
        "softmax": lambda: (lambda e: e / e.sum(axis=1, keepdims=True))(
            cupy.exp(views[0] - views[0].max(axis=1, keepdims=True))),
        "transpose": lambda: cupy.ascontiguousarray(views[0].T),
        "gemm": lambda: cupy.matmul(views[0], views[1]),
    }
    fn = fns[w.op]

    def run():
        with dev._cp_device, dev.stream:
            fn()
    return run


def copy_bandwidth(dev, nbytes: int) -> float:
    """Device-to-device copy, GB/s counting bytes read plus bytes written (the bandwidth ceiling)."""
    src = dev.zeros(nbytes // 4, np.float32)
    dst = dev.empty(nbytes // 4, np.float32)
    ms = device_ms(dev, lambda: dev._copy(dst._mem, src._mem, nbytes), repeat=10, warmup=3,
                   batch=10 if dev.kind == "gpu" else 1)
    return 2 * nbytes / ms / 1e6


def machine() -> dict:
    info = {"host": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(), "numpy": np.__version__, "isthmus": __version__}
    try:
        import pyopencl

        info["pyopencl"] = pyopencl.VERSION_TEXT
    except ImportError:
        pass
    try:
        import cupy

        info["cupy"] = cupy.__version__
    except ImportError:
        pass
    return info


def run(dev, quick: bool = False) -> dict:
    sizes = sizes_for(dev, quick)
    repeat = 5 if quick else 20
    copy_bytes = (64 << 20) if (quick or dev.kind != "gpu") else (1 << 30)
    ceiling = copy_bandwidth(dev, copy_bytes)
    rows = []
    for w in standard(sizes):
        args = w.make(dev)
        with recording() as launches:
            result = w.call(*args)
        ok = w.error(result.to_numpy()) <= tolerance(w.op, np.float32, k=w.host[0].shape[-1])
        direct = DirectCalls(dev, launches)
        batch = 10 if dev.kind == "gpu" else 1
        ms = device_ms(dev, lambda: w.call(*args), repeat=repeat, batch=batch)
        direct_ms = device_ms(dev, direct, repeat=repeat, batch=batch)
        vendor = _vendor(dev, w, args)
        vendor_ms = device_ms(dev, vendor, repeat=repeat, batch=batch) if vendor else None
        numpy_ms = host_ms(w.numpy, repeat=3 if not quick else 1, warmup=1)
        value, unit = w.metric(ms)
        row = {"op": w.op, "label": w.label, "correct": bool(ok), "unit": unit,
               "isthmus_ms": ms, "isthmus": value, "direct_ms": direct_ms, "direct": w.metric(direct_ms)[0],
               "vendor_ms": vendor_ms, "vendor": w.metric(vendor_ms)[0] if vendor_ms else None,
               "numpy_ms": numpy_ms, "numpy": w.metric(numpy_ms)[0],
               "params": launches[0][0].program.defines if launches else {}}
        if unit == "GB/s":
            row["fraction_of_copy"] = value / ceiling
        rows.append(row)
        for a in args:
            a.close()
    return {"device": dev.info(), "machine": machine(), "sizes": sizes, "copy_GBps": ceiling,
            "kernels": rows, "overhead": overhead(dev), "date": _dt.datetime.now(_dt.timezone.utc).isoformat()}


def overhead(dev, calls: int = 2000) -> list[dict]:
    """Host time per call of tiny problems: the library call vs the direct call of the same launches."""
    tiny = {"n": 1 << 10, "rows": 8, "cols": 32, "mnk": 16}
    out = []
    for w in standard(tiny):
        args = w.make(dev)
        with recording() as launches:
            result = w.call(*args)
        direct = DirectCalls(dev, launches)
        lib = per_call_us(lambda: w.call(*args), calls, dev.synchronize)
        raw = per_call_us(direct, calls, dev.synchronize)
        row = {"op": w.op, "launches": len(launches), "isthmus_us": lib, "direct_us": raw, "ratio": lib / raw}
        # The same call writing into an existing output (out= / gemm's c): no allocation per call.
        into = _into(w.op, args, result)
        if into is not None:
            row["isthmus_out_us"] = per_call_us(into, calls, dev.synchronize)
            row["ratio_out"] = row["isthmus_out_us"] / raw
        out.append(row)
        for a in args:
            a.close()
    return out


def _into(op: str, args, result):
    from . import ops

    if op in ("sum", "max", "softmax", "transpose"):
        return lambda: getattr(ops, op)(*args, out=result)
    if op == "gemm":
        return lambda: ops.gemm(args[0], args[1], result)
    return None


def markdown(result: dict) -> str:
    d, m = result["device"], result["machine"]
    direct = "CuPy RawKernel" if d["backend"] == "cuda" else "PyOpenCL"
    lines = [f"# isthmus bench: {d['id']} {d['name']}", "",
             f"- device: {d['name']} ({d['vendor']}), backend {d['backend']}, driver {d['driver_version']}, "
             f"platform {d['platform']}",
             f"- machine: {m['host']}, {m['platform']}, Python {m['python']}, NumPy {m['numpy']}"
             + "".join(f", {k} {m[k]}" for k in ("pyopencl", "cupy") if k in m) + f", isthmus {m['isthmus']}",
             f"- date: {result['date']}; sizes: {result['sizes']}",
             f"- device-to-device copy (bandwidth ceiling): {result['copy_GBps']:.1f} GB/s",
             "- device time from device events (GPUs: around 10 back-to-back calls), median of repeats; "
             "NumPy: host wall time", "",
             f"| kernel | ok | isthmus | {direct} (same kernel) | vendor lib | NumPy (host) | isthmus / copy |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["kernels"]:
        u = r["unit"]
        vend = f"{r['vendor']:.1f} {u}" if r["vendor"] else "-"
        frac = f"{r['fraction_of_copy']:.0%}" if "fraction_of_copy" in r else "-"
        lines.append(f"| {r['label']} | {'yes' if r['correct'] else 'NO'} | {r['isthmus']:.1f} {u} | "
                     f"{r['direct']:.1f} {u} | {vend} | {r['numpy']:.1f} {u} | {frac} |")
    lines += ["", f"Host time per call, tiny problems (library call vs direct {direct} call of the same launches):", "",
              "| op | launches | isthmus µs | with out= µs | direct µs | ratio | ratio with out= |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for o in result["overhead"]:
        with_out = f"{o['isthmus_out_us']:.2f}" if "isthmus_out_us" in o else "-"
        ratio_out = f"{o['ratio_out']:.2f}" if "ratio_out" in o else "-"
        lines.append(f"| {o['op']} | {o['launches']} | {o['isthmus_us']:.2f} | {with_out} | {o['direct_us']:.2f} | "
                     f"{o['ratio']:.2f} | {ratio_out} |")
    return "\n".join(lines) + "\n"


def main(device_id: str | None = None, quick: bool = False, out: str = "benchmarks/results") -> int:
    from rich.console import Console
    from rich.markdown import Markdown

    from .device import device

    dev = device(device_id)
    result = run(dev, quick=quick)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"bench-{dev.backend}-{''.join(c if c.isalnum() else '_' for c in dev.name)[:40]}{'-quick' if quick else ''}"
    (folder / f"{stem}.json").write_text(json.dumps(result, indent=2, default=str))
    text = markdown(result)
    (folder / f"{stem}.md").write_text(text)
    Console(width=160).print(Markdown(text))
    print(f"wrote {folder / stem}.json and .md")
    return 0 if all(r["correct"] for r in result["kernels"]) else 1
