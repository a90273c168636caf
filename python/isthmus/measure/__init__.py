"""Measurement, done one way by ``isthmus bench`` and every script in ``benchmarks/``.

- Timing: device time from device events where the backend has them (CUDA events, OpenCL
  profiling markers; :class:`TorchClock` for a torch peer), otherwise the wall clock around a
  synchronize (:class:`WallClock`); always after a warm-up, repeated, reported as the median
  with its spread (:class:`Sample`); several candidates timed in alternating rounds
  (:func:`interleaved`), so drift in clocks or machine load touches each alike.
- The bandwidth ceiling: a device-to-device copy, counting bytes read plus bytes written
  (:func:`copy_bandwidth`).
- Reports: a markdown table and its JSON twin side by side, each naming the date, the command
  line, the machine, the device and driver, and the library versions (:class:`Report`), in files
  named ``<suite>-<backend>-<device-slug>[-<tag>].{md,json}`` (:func:`result_stem`).

Example::

    from isthmus import measure
    s = measure.device_times(dev, lambda: isthmus.ops.sum(x, out=y), repeat=20, batch=10)
    report = measure.Report("mysuite", "sum on one device", dev, data={"ms": s.as_dict()})
    report.add_table(["op", "ms"], [["sum", f"{s.median:.3f}"]])
    report.write("benchmarks/results/latest")   # mysuite-opencl-pthread-....md and .json
"""
from __future__ import annotations

from .report import Report, Table, command_line, machine, result_stem, slug
from .timing import (CPU_SETTLE_S, CupyClock, QueueClock, Sample, TorchClock, WallClock, copy_bandwidth, device_ms,
                     device_times, host_ms, host_times, interleaved, per_call_times, per_call_us, round_of, settled)

__all__ = ["CPU_SETTLE_S", "CupyClock", "QueueClock", "Report", "Sample", "Table", "TorchClock", "WallClock",
           "command_line", "copy_bandwidth", "device_ms", "device_times", "host_ms", "host_times", "interleaved",
           "machine", "per_call_times", "per_call_us", "result_stem", "round_of", "settled", "slug"]
