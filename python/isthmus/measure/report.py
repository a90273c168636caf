"""Reports, one way for every benchmark: what ran where (:func:`machine`, :func:`command_line`),
the naming of result files (:func:`result_stem`) and the writer of a markdown table with its JSON
twin (:class:`Report`)."""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import re
import shlex
import socket
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from .._version import __version__
from ..errors import InvalidArgumentError


# ---- what ran where ---------------------------------------------------------------------------
_LIBRARIES = ("pyopencl", "cupy", "torch", "jpype", "ray")
_BASE = ("host", "platform", "python", "processor", "cpus", "numpy", "isthmus")  # the report header's own words


def machine() -> dict:
    """The host and the library versions: isthmus, Python, NumPy (and its BLAS), and of
    PyOpenCL, CuPy, torch, JPype and Ray those already imported (asking would import them)."""
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
    elif prog.endswith(".py"):  # relative to the current folder when below it
        script = Path(prog).resolve()
        prog = f"python {script.relative_to(Path.cwd()).as_posix() if script.is_relative_to(Path.cwd()) else prog}"
    else:
        prog = Path(prog).name
    return " ".join([prog, *(shlex.quote(a) for a in argv[1:])])


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
        fields = ("suite", "title", "date", "command", "devices", "machine", "notes", "data")
        return {f: getattr(self, f) for f in fields}

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
