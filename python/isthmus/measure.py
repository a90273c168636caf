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
    report.write("benchmarks/results")   # mysuite-opencl-pthread-....md and .json
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import re
import shlex
import socket
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from .errors import InvalidArgumentError

# ---- statistics -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sample:
    """Repeated timings of one thing (any unit): the median, the least and the most, and how many."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, times: Sequence[float]) -> "Sample":
        if not times:
            raise InvalidArgumentError("a Sample needs at least one timing; got none (repeat must be >= 1)")
        return cls(float(statistics.median(times)), float(min(times)), float(max(times)), len(times))

    @property
    def spread(self) -> float:
        """(most - least) / median: how far apart the repeats were, relative to the figure.
        Two candidates closer than their spread are not told apart by this measurement."""
        return (self.high - self.low) / self.median if self.median else float("inf")

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "spread": self.spread}


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        least = 0 if name == "warmup" else 1
        if not isinstance(value, int) or value < least:
            raise InvalidArgumentError(f"{name} must be an integer >= {least}; got {value!r}")


# ---- clocks -----------------------------------------------------------------------------------


class _Timing:
    ms: float = float("nan")


class WallClock:
    """The wall clock around ``sync()`` (for work with no device events: NumPy on the host, a peer
    on its own queue): the timed region starts after a sync and ends after one, so queued work
    is inside it."""

    def __init__(self, sync: Callable[[], object] | None = None):
        self._sync = sync or (lambda: None)

    def synchronize(self) -> None:
        self._sync()

    @contextmanager
    def timer(self) -> Iterator[_Timing]:
        timing = _Timing()
        self._sync()
        t0 = time.perf_counter()
        yield timing
        self._sync()
        timing.ms = (time.perf_counter() - t0) * 1e3


class TorchClock:
    """CUDA events through torch, on torch's current stream of ``device`` (a torch peer's work)."""

    def __init__(self, torch, device=None):
        self._torch = torch
        self._device = device

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self._device)

    @contextmanager
    def timer(self) -> Iterator[_Timing]:
        timing = _Timing()
        start = self._torch.cuda.Event(enable_timing=True)
        end = self._torch.cuda.Event(enable_timing=True)
        start.record()
        yield timing
        end.record()
        end.synchronize()
        timing.ms = start.elapsed_time(end)


class CupyClock:
    """CUDA events through CuPy on ``stream`` (a CuPy stream that is not an isthmus device's)."""

    def __init__(self, stream):
        self._stream = stream

    def synchronize(self) -> None:
        self._stream.synchronize()

    @contextmanager
    def timer(self) -> Iterator[_Timing]:
        import cupy

        timing = _Timing()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(self._stream)
        yield timing
        end.record(self._stream)
        end.synchronize()
        timing.ms = cupy.cuda.get_elapsed_time(start, end)


class QueueClock:
    """OpenCL profiling markers on a PyOpenCL ``queue`` made with profiling enabled (a peer's own
    queue, such as CLBlast's)."""

    def __init__(self, queue):
        self._queue = queue

    def synchronize(self) -> None:
        self._queue.finish()

    @contextmanager
    def timer(self) -> Iterator[_Timing]:
        import pyopencl as cl

        timing = _Timing()
        start = cl.enqueue_marker(self._queue)
        yield timing
        end = cl.enqueue_marker(self._queue)
        end.wait()
        timing.ms = (end.profile.end - start.profile.end) * 1e-6


# A clock is anything with ``synchronize()`` and a ``timer()`` context manager whose value has
# ``ms`` once the block ends: an isthmus Device (its own events), WallClock, TorchClock.


def device_times(clock, fn: Callable[[], object], repeat: int = 10, warmup: int = 2, batch: int = 1) -> Sample:
    """Milliseconds per call of ``fn()``: each repeat times ``batch`` back-to-back calls with
    ``clock`` (a device's events, so the host's enqueue overlaps the device's work as in a real
    pipeline) and divides by ``batch``; after ``warmup`` calls and a synchronize."""
    _check_counts(repeat=repeat, warmup=warmup, batch=batch)
    for _ in range(warmup):
        fn()
    clock.synchronize()
    times = []
    for _ in range(repeat):
        with clock.timer() as t:
            for _ in range(batch):
                fn()
        times.append(t.ms / batch)
    return Sample.of(times)


def device_ms(dev, fn: Callable[[], object], repeat: int = 10, warmup: int = 2, batch: int = 1) -> float:
    """The median of :func:`device_times` (``dev``: a device or any clock)."""
    return device_times(dev, fn, repeat, warmup, batch).median


def host_times(fn: Callable[[], object], repeat: int = 5, warmup: int = 1,
               sync: Callable[[], object] | None = None) -> Sample:
    """Wall milliseconds of ``fn()`` then ``sync()``, one call per repeat, after ``warmup`` calls."""
    return device_times(WallClock(sync), fn, repeat, warmup, 1)


def host_ms(fn: Callable[[], object], repeat: int = 5, warmup: int = 1,
            sync: Callable[[], object] | None = None) -> float:
    """The median of :func:`host_times`."""
    return host_times(fn, repeat, warmup, sync).median


def per_call_times(fn: Callable[[], object], calls: int, sync: Callable[[], object] | None = None, rounds: int = 5,
                   warmup: int = 1, per_call: int = 1, clock: Callable[[], float] = time.perf_counter) -> Sample:
    """Host microseconds per call over rounds of ``calls`` back-to-back calls (the launch overhead:
    ``sync`` waits for the device after each round, outside the timed loop). A call that makes
    ``per_call`` launches counts as that many. ``clock``: seconds from the wall clock, or e.g.
    ``time.thread_time`` for the calling thread's CPU time (which other processes disturb less)."""
    _check_counts(calls=calls, rounds=rounds, warmup=warmup, per_call=per_call)
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(rounds):
        t0 = clock()
        for _ in range(calls):
            fn()
        t1 = clock()
        if sync:
            sync()
        times.append((t1 - t0) / (calls * per_call) * 1e6)
    return Sample.of(times)


def per_call_us(fn: Callable[[], object], calls: int, sync: Callable[[], object] | None = None, rounds: int = 5,
                warmup: int = 1, per_call: int = 1) -> float:
    """The median of :func:`per_call_times`."""
    return per_call_times(fn, calls, sync, rounds, warmup, per_call).median


def interleaved(rounds_of: dict[str, Callable[[], float]], rounds: int = 5) -> dict[str, Sample]:
    """Time several candidates in alternating rounds (A B C, A B C, ...): each value of
    ``rounds_of`` times one round of its candidate and returns the figure (e.g. :func:`round_of`);
    a candidate's figures over ``rounds`` make its Sample. Drift (clock boost, other load on the
    machine) then touches every candidate alike, which timing one after the other does not.
    Warm each candidate up before (a compile or a first allocation is no round)."""
    _check_counts(rounds=rounds)
    times: dict[str, list] = {name: [] for name in rounds_of}
    for _ in range(rounds):
        for name, one_round in rounds_of.items():
            times[name].append(one_round())
    return {name: Sample.of(t) for name, t in times.items()}


def round_of(clock, fn: Callable[[], object], batch: int = 1) -> Callable[[], float]:
    """One round for :func:`interleaved`: ``batch`` back-to-back calls of ``fn`` timed with
    ``clock``, in milliseconds per call."""
    _check_counts(batch=batch)
    return lambda: device_times(clock, fn, repeat=1, warmup=0, batch=batch).median


# ---- the bandwidth ceiling --------------------------------------------------------------------


def copy_bandwidth(dev, nbytes: int | None = None, repeat: int = 10) -> float:
    """Device-to-device copy of ``nbytes`` (default: 1 GiB on a GPU, 64 MiB elsewhere), in GB/s
    counting bytes read plus bytes written: the ceiling of a memory-bound kernel on ``dev``."""
    if nbytes is None:
        nbytes = (1 << 30) if dev.kind == "gpu" else (64 << 20)
    if nbytes < 4:
        raise InvalidArgumentError(f"copy_bandwidth needs at least 4 bytes to copy; got {nbytes}")
    n = nbytes // 4
    src = dev.asarray(np.ones(n, np.float32))  # not zeros: a copy of zeros can run faster than data does
    dst = dev.empty(n, np.float32)
    try:
        ms = device_ms(dev, lambda: dev._copy(dst._mem, src._mem, n * 4), repeat=repeat, warmup=3,
                       batch=10 if dev.kind == "gpu" else 1)
    finally:
        src.close()
        dst.close()
    return 2 * n * 4 / ms / 1e6


# ---- what ran where ---------------------------------------------------------------------------

_LIBRARIES = ("pyopencl", "cupy", "torch", "jpype", "ray")
_BASE = ("host", "platform", "python", "processor", "cpus", "numpy", "isthmus")  # the report header's own words


def machine() -> dict:
    """The host and the library versions: isthmus, Python, NumPy (and its BLAS), and of
    PyOpenCL, CuPy, torch, JPype and Ray those already imported (asking would import them)."""
    from . import __version__

    info = {"host": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "numpy": np.__version__, "isthmus": __version__}
    blas = _numpy_blas()
    if blas:
        info["numpy_blas"] = blas
    for name in _LIBRARIES:
        mod = sys.modules.get(name) or (_import(name) if name in ("pyopencl", "cupy") else None)
        version = getattr(mod, "VERSION_TEXT", None) or getattr(mod, "__version__", None)
        if version:
            info[name] = str(version)
    return info


_machine = machine  # Report's own parameter is named machine


def _import(name: str):
    try:
        return __import__(name)
    except Exception:  # noqa: BLE001 - a missing or broken optional library is simply not reported
        return None


def _numpy_blas() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # noqa: BLE001 - older NumPy has no dict form; the report goes without it
        return ""
    return f"{blas.get('name')} {blas.get('version')}"


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that is running, as a user would type it again."""
    argv = list(sys.argv if argv is None else argv)
    prog = argv[0] if argv else "python"
    if prog.endswith("__main__.py"):
        prog = f"python -m {Path(prog).parent.name}"
    elif prog.endswith(".py"):
        prog = f"python {_relative(prog)}"
    else:
        prog = Path(prog).name
    return " ".join([prog, *(shlex.quote(a) for a in argv[1:])])


def _relative(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path


# ---- result names -----------------------------------------------------------------------------

_SUITE = re.compile(r"^[a-z0-9][a-z0-9_]*$")


def slug(text: str, limit: int = 60) -> str:
    """Lower case letters and digits, runs of anything else as one dash."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")


def result_stem(suite: str, dev=None, tag: str = "") -> str:
    """The file name, without extension, of a result: ``<suite>-<backend>-<device-slug>[-<tag>]``,
    or ``<suite>[-<tag>]`` for a run over several devices or none (``dev`` None). ``dev``: a
    Device or its ``info()``."""
    if not isinstance(suite, str) or not _SUITE.match(suite):
        raise InvalidArgumentError(f"a suite name is lower case letters, digits and underscores "
                                   f"(it starts the result file names); got {suite!r}")
    parts = [suite]
    if dev is not None:
        info = _info(dev)
        parts += [info["backend"], slug(info["name"])]
    if tag:
        parts.append(slug(tag))
    return "-".join(p for p in parts if p)


# ---- reports ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Table:
    columns: Sequence[str]
    rows: list
    caption: str = ""

    def markdown(self) -> list[str]:
        lines = [self.caption, ""] if self.caption else []
        lines += ["| " + " | ".join(self.columns) + " |", "| " + " | ".join("---" for _ in self.columns) + " |"]
        for row in self.rows:
            if len(row) != len(self.columns):
                raise InvalidArgumentError(f"a table row has {len(row)} cells for {len(self.columns)} columns "
                                           f"({list(self.columns)}): {list(row)}")
            lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
        return lines


def _info(dev) -> dict:
    return dev if isinstance(dev, dict) else dev.info()


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


class Report:
    """One benchmark run, written as ``<stem>.md`` (header + tables) and ``<stem>.json`` (the same
    header as fields + ``data``, the raw numbers). The header names the date, the command line,
    each device (name, vendor, backend, driver, platform) and the machine with its library
    versions (:func:`machine`). ``devices``: one Device, a list of them, or their ``info()``
    dicts. ``extra``: more versions for the header (e.g. ``{"java": "21"}``); ``date``, ``command``
    and ``machine`` default to now, this process's command line and :func:`machine` (pass them to
    render a stored run again)."""

    def __init__(self, suite: str, title: str, devices=None, *, data=None, notes: Sequence[str] = (),
                 command: str | None = None, extra: dict | None = None, date: str | None = None,
                 machine: dict | None = None):
        result_stem(suite)  # checks the name now, not after an hour of measuring
        if devices is not None and not isinstance(devices, (list, tuple)):
            devices = [devices]
        self.suite, self.title = suite, title
        self.devices = [_info(d) for d in devices or []]
        self.data = {} if data is None else data
        self.notes = list(notes)
        self.sections: list = []  # Tables and markdown text, in order
        self.command = command_line() if command is None else command
        self.date = date or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.machine = {**(machine or _machine()), **(extra or {})}

    def add_table(self, columns: Sequence[str], rows: list, caption: str = "") -> None:
        """A table of ``rows`` (sequences of cells, one per column; floats are shown to 4 digits)."""
        self.sections.append(Table(list(columns), list(rows), caption))

    def add_records(self, records: list[dict], columns: Sequence[str], caption: str = "") -> None:
        """A table of ``records`` (dicts), one column per key in ``columns`` (missing keys: ``-``)."""
        self.add_table(columns, [[r.get(c) for c in columns] for r in records], caption)

    def add_text(self, markdown: str) -> None:
        """A paragraph, list or code block of markdown (e.g. a profile) after what came before."""
        self.sections.append(markdown.strip("\n"))

    def document(self) -> dict:
        return {"suite": self.suite, "title": self.title, "date": self.date, "command": self.command,
                "devices": self.devices, "machine": self.machine, "notes": self.notes,
                "data": self.data}

    def header(self) -> list[str]:
        m = self.machine
        lines = [f"# {self.title}", "", f"- date: {self.date}", f"- command: `{self.command}`"]
        for d in self.devices:
            lines.append(f"- device: {d['id']} {d['name']} ({d['vendor']}), backend {d['backend']}, "
                         f"driver {d['driver_version']}, platform {d['platform']}")
        versions = ", ".join(f"{k} {v}" for k, v in m.items() if k not in _BASE and v not in (None, ""))
        lines.append(f"- machine: {m['host']}, {m['platform']}, {m.get('cpus', '?')} CPUs, Python {m['python']}, "
                     f"NumPy {m['numpy']}, isthmus {m['isthmus']}" + (f", {versions}" if versions else ""))
        lines += [f"- {note}" for note in self.notes]
        return lines

    def markdown(self) -> str:
        lines = self.header()
        for section in self.sections:
            lines += ["", *(section.markdown() if isinstance(section, Table) else [section])]
        return "\n".join(lines) + "\n"

    def stem(self, tag: str = "") -> str:
        return result_stem(self.suite, self.devices[0] if len(self.devices) == 1 else None, tag)

    def write(self, out, tag: str = "") -> Path:
        """Write ``<out>/<stem>.md`` and ``.json`` (``out`` is made if missing); returns the path
        without extension."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        base = folder / self.stem(tag)
        text = self.markdown()  # first: a malformed table must not leave a JSON without its twin
        Path(f"{base}.json").write_text(json.dumps(self.document(), indent=1, default=str) + "\n")
        Path(f"{base}.md").write_text(text)
        return base
