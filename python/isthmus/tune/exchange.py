"""Tuned configs as JSON: the exported document and its validation (never pickle).

A document is ``{"format": "isthmus-tuning", "schema": 1, "entries": [...]}``; an entry is::

    {"kernel": "gemm", "source_hash": "<sha256>", "options": "<json>", "dtype": "float32",
     "device": {"backend": "opencl", "vendor": "...", "name": "...", "driver": "..."},
     "bucket": {"m": 512, "n": 512, "k": 512}, "params": {"TM": 64, ...},
     "time_ms": 1.25, "default_ms": 2.5}

:func:`validate` checks the whole document before anything is written and names the first bad
entry: unknown kernel, a field of the wrong type, a dtype the kernel lacks, a problem bucket that
is not the kernel's, a parameter value outside the kernel's space.
"""
from __future__ import annotations

import json
import math

from ..errors import DatabaseError
from .db import FORMAT, SCHEMA, canonical

_DEVICE_FIELDS = ("backend", "vendor", "name", "driver")


def to_entry(row: dict) -> dict:
    from .space import kernel_family

    family = kernel_family(row["kernel"])
    bucket = json.loads(row["bucket"])
    return {"kernel": row["kernel"], "source_hash": row["source_hash"], "options": row["options"],
            "dtype": row["dtype"],
            "device": {"backend": row["backend"], "vendor": row["vendor"], "name": row["device"],
                       "driver": row["driver"]},
            "bucket": dict(zip(family.problem, bucket)) if family is not None else bucket,
            "params": json.loads(row["params"]), "time_ms": row["time_ms"], "default_ms": row["default_ms"]}


class _Unlimited:
    """Device limits for checking restrictions of a config tuned elsewhere: only the space's own
    rules (divisibility, shapes) can be checked here, not the other device's limits."""

    max_work_group_size = 1 << 30
    local_mem_size = 1 << 40
    kind = "gpu"


def validate(doc, *, source: str = "document", skip_bad: bool = False) -> list[tuple]:
    """Rows ready to store: (key row, canonical params, time_ms, default_ms). Raises DatabaseError
    for the first bad entry; ``skip_bad`` drops bad entries instead (the shipped configs, which a
    changed kernel may make stale, must never stop the good ones from loading)."""
    if not isinstance(doc, dict):
        raise DatabaseError(f"{source}: expected a JSON object with 'format', 'schema' and 'entries', "
                            f"got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise DatabaseError(f"{source}: 'format' is {doc.get('format')!r}, expected {FORMAT!r}")
    if doc.get("schema") != SCHEMA:
        raise DatabaseError(f"{source}: schema {doc.get('schema')!r} is not {SCHEMA}, the one this isthmus reads")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise DatabaseError(f"{source}: 'entries' must be a list, got {type(entries).__name__}")
    if not skip_bad:
        return [_entry(i, e, source) for i, e in enumerate(entries)]
    rows = []
    for i, e in enumerate(entries):
        try:
            rows.append(_entry(i, e, source))
        except DatabaseError:
            continue
    return rows


def _entry(i: int, e, source: str) -> tuple:
    where = f"{source}: entry {i}"
    if not isinstance(e, dict):
        raise DatabaseError(f"{where} must be an object, got {type(e).__name__}")
    from ..dtypes import lookup as dtype_lookup
    from .space import kernel_family, known_kernels

    kernel = e.get("kernel")
    if not isinstance(kernel, str):
        raise DatabaseError(f"{where}: 'kernel' must be a string, got {kernel!r}")
    where = f"{source}: entry {i} ({kernel})"
    family = kernel_family(kernel)
    if family is None:
        raise DatabaseError(f"{where}: unknown kernel {kernel!r}; known: {', '.join(known_kernels())}")
    expected = {"kernel", "source_hash", "options", "dtype", "device", "bucket", "params", "time_ms", "default_ms"}
    missing, extra = expected - set(e) - {"default_ms"}, set(e) - expected
    if missing or extra:
        raise DatabaseError(f"{where}: missing fields {sorted(missing)}, unknown fields {sorted(extra)}")
    for f in ("source_hash", "options", "dtype"):
        if not isinstance(e[f], str) or not e[f]:
            raise DatabaseError(f"{where}: {f!r} must be a non-empty string, got {e[f]!r}")
    try:
        dt = dtype_lookup(e["dtype"])
    except Exception:
        raise DatabaseError(f"{where}: dtype {e['dtype']!r} is not an isthmus dtype") from None
    if dt.name not in family.dtypes:
        raise DatabaseError(f"{where}: {kernel} has no dtype {dt.name} (it has {', '.join(family.dtypes)})")
    dev = e["device"]
    if not isinstance(dev, dict) or set(dev) != set(_DEVICE_FIELDS) or not all(isinstance(dev[f], str)
                                                                                 for f in _DEVICE_FIELDS):
        raise DatabaseError(f"{where}: 'device' must be an object of strings {list(_DEVICE_FIELDS)}, got {dev!r}")
    bucket = e["bucket"]
    if not isinstance(bucket, dict) or set(bucket) != set(family.problem):
        raise DatabaseError(f"{where}: 'bucket' must name the problem sizes {list(family.problem)}, got {bucket!r}")
    for name, v in bucket.items():
        if not _is_int(v) or v < 1 or v & (v - 1):
            raise DatabaseError(f"{where}: bucket {name} = {v!r} must be a positive power of two")
    params = e["params"]
    if not isinstance(params, dict):
        raise DatabaseError(f"{where}: 'params' must be an object, got {type(params).__name__}")
    names = {t.name for t in family.tunables}
    if set(params) != names:
        raise DatabaseError(f"{where}: params {sorted(params)} are not {kernel}'s tunables {sorted(names)}")
    for t in family.tunables:
        v = params[t.name]
        if type(v) is not type(t.default) or v not in t.values:
            raise DatabaseError(f"{where}: params {t.name} = {v!r} is out of the space (one of "
                                f"{', '.join(map(str, t.values))})")
    problem = dict(bucket)
    if not family.is_valid(params, _Unlimited(), problem, dt):
        raise DatabaseError(f"{where}: params {params} break a restriction of {kernel}: "
                            f"{'; '.join(family.restrictions)}")
    time_ms = e["time_ms"]
    if not _is_number(time_ms) or not math.isfinite(time_ms) or time_ms <= 0:
        raise DatabaseError(f"{where}: 'time_ms' must be a positive number, got {time_ms!r}")
    default_ms = e.get("default_ms")
    if default_ms is not None and (not _is_number(default_ms) or not math.isfinite(default_ms) or default_ms <= 0):
        raise DatabaseError(f"{where}: 'default_ms' must be a positive number or null, got {default_ms!r}")
    keyrow = (kernel, e["source_hash"], e["options"], dev["backend"], dev["vendor"], dev["name"], dev["driver"],
              dt.name, json.dumps([bucket[p] for p in family.problem]))
    return keyrow, canonical(params), float(time_ms), None if default_ms is None else float(default_ms)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
