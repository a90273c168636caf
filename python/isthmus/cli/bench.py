"""``isthmus bench``: the kernel library against what a user would otherwise call, in one run.

For every library kernel: achieved GB/s or GFLOP/s (device events, median of repeats), next to
the direct PyOpenCL / CuPy ``RawKernel`` call of the very same compiled kernel with the same
arguments (recorded from the library call and replayed), the vendor library where there is one
(CuPy / cuBLAS on CUDA) and NumPy on the host; a device-to-device copy gives the bandwidth
ceiling. Host overhead per call is measured on tiny problems for the library call (allocating its
result, and with ``out=``) and the direct call, in alternating rounds. Results go to ``--out``
(default: the current folder) as JSON plus a markdown table, named after backend and device
(``bench-<backend>-<device>[-quick]``). Timing, the copy ceiling and the report writer are
:mod:`isthmus.measure`'s, as for every script in ``benchmarks/``.
"""
from __future__ import annotations

import datetime as _dt

import numpy as np

from .. import measure
from ..device import device
from ..measure import copy_bandwidth, device_ms, host_ms, machine, per_call_us
from ..ops.workloads import host_result, sizes_for, standard
from ..record import Recording, recording


class DirectCalls:
    """The same launches made straight through PyOpenCL or CuPy, as a user without isthmus would."""

    def __init__(self, dev, rec: Recording):
        self.rec = rec  # keeps the recorded buffers alive
        # the packed arguments as the backend's call takes them (isthmus packs a buffer as an object holding its memory)
        self.calls = [dev.launcher.direct_call(k, g, loc, [dev.launcher.native_arg(v) for v in packed])
                      for k, g, loc, packed in rec.launches]

    def __call__(self):
        for fn, args, kwargs in self.calls:
            fn(*args, **kwargs)


def _vendor(dev, w, args):
    """The vendor-library call a user of the backend would make (the spec's reference through CuPy /
    cuBLAS on CUDA), or None."""
    def make(views):
        import cupy

        return lambda: w.vendor(cupy, tuple(views))
    return dev._vendor_call(make, args)


NUMPY_REPEAT = 5  # warm NumPy calls timed per figure, --quick too: one call is mostly its cold start


def host_numpy_ms(fn) -> float:
    """NumPy's host time: the median of NUMPY_REPEAT calls after a warm-up call (page faults,
    allocator growth and thread-pool start-up land in the warm-up, not in the figure)."""
    return host_ms(fn, repeat=NUMPY_REPEAT, warmup=1)


def run(dev, quick: bool = False, specs=None) -> dict:
    """Every library op (or ``specs``) at its standard problem for ``dev``."""
    which = sizes_for(dev, quick)
    repeat = 5 if quick else 20
    copy_bytes = (64 << 20) if (quick or dev.kind != "gpu") else (1 << 30)
    ceiling = copy_bandwidth(dev, copy_bytes)
    rows, sizes = [], {}
    for w in standard(which, specs):
        sizes[w.op] = w.problem
        args = w.make(dev)
        with recording(dev) as rec:
            result = w.call(*args)
        ok = w.error(host_result(result)) <= w.tolerance(np.float32)
        direct = DirectCalls(dev, rec)
        batch = 10 if dev.kind == "gpu" else 1
        ms = device_ms(dev, lambda: w.call(*args), repeat=repeat, batch=batch)
        direct_ms = device_ms(dev, direct, repeat=repeat, batch=batch)
        vendor = _vendor(dev, w, args)
        vendor_ms = device_ms(dev, vendor, repeat=repeat, batch=batch) if vendor else None
        numpy_ms = host_numpy_ms(w.numpy)
        value, unit = w.metric(ms)
        row = {"op": w.op, "label": w.label, "correct": bool(ok), "unit": unit, "in_place": bool(w.spec.in_place),
               "isthmus_ms": ms, "isthmus": value, "direct_ms": direct_ms, "direct": w.metric(direct_ms)[0],
               "vendor_ms": vendor_ms, "vendor": w.metric(vendor_ms)[0] if vendor_ms else None,
               "numpy_ms": numpy_ms, "numpy": w.metric(numpy_ms)[0],
               "params": rec.launches[0][0].program.defines if rec.launches else {}}
        if unit == "GB/s":
            row["fraction_of_copy"] = value / ceiling
        rows.append(row)
        for a in args:
            a.close()
    return {"device": dev.info(), "machine": machine(), "sizes": sizes, "copy_GBps": ceiling,
            "kernels": rows, "overhead": overhead(dev, calls=200 if quick else 2000, specs=specs),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat()}


def overhead(dev, calls: int = 2000, rounds: int = 7, specs=None) -> list[dict]:
    """Host time per call of tiny problems (each spec's ``tiny``): the library call (allocating its
    result, and with ``out=`` where the op has one) vs the direct call of the very same launches,
    writing into the buffers the library call used. Rounds of the three alternate, so that drift
    (clocks, other load) touches each alike; each is the median over rounds."""
    out = []
    for w in standard("tiny", specs):
        args = w.make(dev)
        with recording(dev) as rec:
            result = w.call(*args)
        # (the call with its arguments bound once: the figure is the library call's)
        fns = {"isthmus_us": w.bound(args), "direct_us": DirectCalls(dev, rec)}
        into = None
        # the same call into an existing output: no allocation per call (an op returning several
        # buffers takes them through several parameters: it has no single out= to time)
        if w.spec.has_out and not isinstance(result, tuple):
            into = w.bound(args, out=result)
            with recording(dev) as rec_into:
                into()
            if _signature(rec_into) != _signature(rec):
                raise RuntimeError(f"bench: {w.op} with out= makes other launches than without")
            fns["isthmus_out_us"] = into
        us = _interleaved(fns, calls, dev.synchronize, rounds)
        row = {"op": w.op, "launches": len(rec), "in_place": bool(w.spec.in_place), **us,
               "ratio": us["isthmus_us"] / us["direct_us"]}
        if into is not None:
            row["ratio_out"] = us["isthmus_out_us"] / us["direct_us"]
        out.append(row)
        for a in args:
            a.close()
    return out


def _signature(rec: Recording) -> list:
    return [(k, g, loc) for k, g, loc, _ in rec.launches]


def _interleaved(fns: dict, calls: int, sync, rounds: int) -> dict:
    """Median host µs per call of each function, measured in alternating rounds."""
    for fn in fns.values():
        fn()
    times = measure.interleaved({name: (lambda fn=fn: per_call_us(fn, calls, sync, rounds=1, warmup=0))
                                 for name, fn in fns.items()}, rounds)
    return {name: t.median for name, t in times.items()}


def report(result: dict) -> "measure.Report":
    """The report of a :func:`run` result (the date, machine and command it recorded)."""
    d = result["device"]
    direct = "CuPy RawKernel" if d["backend"] == "cuda" else "PyOpenCL"
    rep = measure.Report("bench", f"isthmus bench: {d['id']} {d['name']}", d, data=result, date=result["date"],
                         machine=result["machine"], command=result.get("command"), notes=[
                             f"sizes: {result['sizes']}",
                             f"device-to-device copy (bandwidth ceiling): {result['copy_GBps']:.1f} GB/s",
                             "device time from device events (GPUs: around 10 back-to-back calls), median of repeats; "
                             "NumPy: host wall time"])
    rows = []
    for r in result["kernels"]:
        u = r["unit"]
        vend = f"{r['vendor']:.1f} {u}" if r["vendor"] else "-"
        frac = f"{r['fraction_of_copy']:.0%}" if "fraction_of_copy" in r else "-"
        rows.append([r["label"], "yes" if r["correct"] else "NO", f"{r['isthmus']:.1f} {u}", f"{r['direct']:.1f} {u}",
                     vend, f"{r['numpy']:.1f} {u}", frac])
    rep.add_table(["kernel", "ok", "isthmus", f"{direct} (same kernel)", "vendor lib", "NumPy (host)",
                   "isthmus / copy"], rows)
    rows = []
    for o in result["overhead"]:
        in_place = "in place" if o.get("in_place") else "-"
        with_out = f"{o['isthmus_out_us']:.2f}" if "isthmus_out_us" in o else in_place
        ratio_out = f"{o['ratio_out']:.2f}" if "ratio_out" in o else in_place
        rows.append([o["op"], o["launches"], f"{o['isthmus_us']:.2f}", with_out, f"{o['direct_us']:.2f}",
                     f"{o['ratio']:.2f}", ratio_out])
    rep.add_table(["op", "launches", "isthmus µs", "with out= µs", "direct µs", "ratio", "ratio with out="], rows,
                  f"Host time per call, tiny problems: the library call (allocating its result, and with out= into an "
                  f"existing one) vs the direct {direct} call of the same launches into the buffers the library call "
                  f"used (median of alternating rounds):")
    return rep


def markdown(result: dict) -> str:
    return report(result).markdown()


def main(device_id: str | None = None, quick: bool = False, out: str | None = ".") -> int:
    """Run, print the tables, and write them into ``out`` (None: print only)."""
    from rich.console import Console
    from rich.markdown import Markdown

    dev = device(device_id)
    result = run(dev, quick=quick)
    result.setdefault("command", measure.command_line())
    rep = report(result)
    Console(width=160).print(Markdown(rep.markdown()))
    if out is not None:
        print(f"wrote {rep.write(out, 'quick' if quick else '')}.json and .md")
    return 0 if all(r["correct"] for r in result["kernels"]) else 1
