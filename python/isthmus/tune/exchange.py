"""Tuned configs as JSON: the exported document and its validation (never pickle).

A document is ``{"format": "isthmus-tuning", "schema": 1, "entries": [...]}``; an entry is::

    {"kernel": "gemm", "source_hash": "<sha256>", "options": "<json>", "dtype": "float32",
     "device": {"backend": "opencl", "vendor": "...", "name": "...", "driver": "..."},
     "bucket": {"m": 512, "n": 512, "k": 512}, "params": {"TM": 64, ...},
     "time_ms": 1.25, "default_ms": 2.5}

A document may also say how many CPU cores its CPU devices had, ``"cores": {"<device name>": 2}``
(the bundled files do; see :mod:`.lookup`).

:func:`validate` checks the whole document before anything is written and names the first bad
entry: a field of the wrong type, a dtype the kernel lacks, a problem bucket that is not the
kernel's, a parameter value outside the kernel's space. An entry of a kernel this process does not
know (a user's kernel, ``isthmus.tune.declare``, not declared here) is checked as far as can be
without its declaration and stored as given: its ``bucket`` is then a list in the kernel's order of
problem sizes (what an export writes for it) or an object in that order; a later declaration of the
kernel with the same source uses it.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import warnings
from types import SimpleNamespace

from .. import jsonsafe
from ..dtypes import lookup as dtype_lookup
from ..errors import DatabaseError
from .space import kernel_family
from .storage import FORMAT, SCHEMA, TuningDatabaseWarning, canonical, fingerprint, parse_best
from .targets import UserFamily

_DEVICE_FIELDS = ("backend", "vendor", "name", "driver")
# Bounds on what an import reads: far above any real export (a few KB per entry), far below what
# would exhaust memory or the parser's recursion.
MAX_DOCUMENT_BYTES = 64 << 20
MAX_ENTRIES = 100_000
MAX_FIELD_CHARS = {"source_hash": 128, "options": 4096, "dtype": 32, "kernel": 64}
MAX_DEVICE_CHARS = 512
MAX_BUCKET = 1 << 62


def load_document(data: bytes, source: str = "document"):
    """The JSON document in ``data`` (UTF-8, at most MAX_DOCUMENT_BYTES), or DatabaseError saying
    why it cannot be read: never a decoding, recursion or number-conversion error."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DatabaseError(f"{source}: {len(data)} bytes is larger than a tuning export can be "
                            f"(at most {MAX_DOCUMENT_BYTES >> 20} MiB)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        hint = " (it looks like UTF-16: save it as UTF-8)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise DatabaseError(f"{source} is not UTF-8 text{hint}: {exc}") from None
    depth = jsonsafe.depth(text)  # (json.loads's recursion is not bounded on every Python)
    if depth > jsonsafe.MAX_DEPTH:
        raise DatabaseError(f"{source}: JSON nested {depth} levels deep is not a tuning export "
                            f"(an export nests 4 levels; at most {jsonsafe.MAX_DEPTH} are read)")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise DatabaseError(f"{source}: JSON nested too deeply to be a tuning export") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, integers beyond Python's digit limit
        raise DatabaseError(f"{source} is not a valid JSON tuning export: {exc}") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def export(db) -> dict:
    """The best configs of the Database ``db`` as a JSON-able document (what ``isthmus db export`` writes)."""
    entries, bad = [], 0
    for row in db.best():
        entry = to_entry(row)
        if entry is None:
            bad += 1
        else:
            entries.append(entry)
    if bad:
        warnings.warn(f"tuning database {db.path or '(bundled)'}: {bad} best-config rows with bad values or "
                      f"missing columns were left out", TuningDatabaseWarning, stacklevel=2)
    return {"format": FORMAT, "schema": SCHEMA, "entries": entries}


def import_document(db, doc, *, source: str = "document", skip_bad: bool = False) -> int:
    """Validate ``doc`` whole, then merge its entries into the Database ``db`` (a faster config
    wins); all or nothing (``skip_bad``: leave out the entries that do not validate). Entries tuned
    for another version of their kernel's source are left out (no launch would use them); returns
    how many entries were merged."""
    rows, _ = split_stale(validate(doc, source=source, skip_bad=skip_bad))
    db.merge(rows)
    return len(rows)


def to_entry(row: dict) -> dict | None:
    """A stored best-config row as an export entry, or None when the row's values are unreadable
    (the caller leaves it out: a bad row must not hide the good ones)."""
    try:
        family = kernel_family(row["kernel"])
        dims = len(family.problem) if family is not None else len(jsonsafe.loads(row["bucket"]))
        parsed = parse_best(row["bucket"], row["params"], dims)
        time_ms, default_ms = row["time_ms"], row.get("default_ms")
        if parsed is None or not _is_number(time_ms) or (default_ms is not None and not _is_number(default_ms)):
            return None
        bucket, params = parsed
        named = family is not None and not isinstance(family, UserFamily)  # a user's kernel: its order, not names
        return {**{k: row[k] for k in ("kernel", "source_hash", "options", "dtype")},
                "device": {"backend": row["backend"], "vendor": row["vendor"], "name": row["device"],
                           "driver": row["driver"]},
                "bucket": dict(zip(family.problem, bucket)) if named else list(bucket),
                "params": params, "time_ms": time_ms, "default_ms": default_ms}
    except (KeyError, TypeError, ValueError, RecursionError):
        return None


# Device limits for checking restrictions of a config tuned elsewhere: only the space's own rules
# (divisibility, shapes) can be checked here, not the other device's limits; as a GPU and as a CPU
# (some variants are for CPUs only: ``is_cpu`` in a restriction).
_UNLIMITED = tuple(SimpleNamespace(max_work_group_size=1 << 30, local_mem_size=1 << 40, local_mem_optin=None,
                                   wgmma=True, kind=kind) for kind in ("gpu", "cpu"))


def validate(doc, *, source: str = "document", skip_bad: bool = False) -> list[tuple]:
    """Rows ready to store: (key row, canonical params, time_ms, default_ms). Raises DatabaseError
    for the first bad entry; ``skip_bad`` drops bad entries instead (the shipped configs, which a
    changed kernel may make stale, must never stop the good ones from loading)."""
    if not isinstance(doc, dict):
        raise DatabaseError(f"{source}: expected a JSON object with 'format', 'schema' and 'entries', "
                            f"got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise DatabaseError(f"{source}: 'format' is {doc.get('format')!r}, expected {FORMAT!r}")
    if type(doc.get("schema")) is not int or doc.get("schema") != SCHEMA:
        raise DatabaseError(f"{source}: schema {doc.get('schema')!r} is not {SCHEMA}, the one this isthmus reads")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise DatabaseError(f"{source}: 'entries' must be a list, got {type(entries).__name__}")
    if len(entries) > MAX_ENTRIES:
        raise DatabaseError(f"{source}: {len(entries)} entries, more than a tuning export holds (at most {MAX_ENTRIES})")
    rows = []
    for i, e in enumerate(entries):
        try:
            rows.append(_entry(i, e, source))
        except DatabaseError:
            if not skip_bad:
                raise
    return rows


def _entry(i: int, e, source: str) -> tuple:
    where = f"{source}: entry {i}"
    if not isinstance(e, dict):
        raise DatabaseError(f"{where} must be an object, got {type(e).__name__}")
    kernel = e.get("kernel")
    if not isinstance(kernel, str) or len(kernel) > MAX_FIELD_CHARS["kernel"]:
        raise DatabaseError(f"{where}: 'kernel' must be a kernel's name, got {_short(kernel)}")
    where = f"{source}: entry {i} ({kernel})"
    family = kernel_family(kernel)  # None: a kernel this process has not declared (checked as far as can be)
    expected = {"kernel", "source_hash", "options", "dtype", "device", "bucket", "params", "time_ms", "default_ms"}
    missing, extra = expected - set(e) - {"default_ms"}, set(e) - expected
    if missing or extra:
        raise DatabaseError(f"{where}: missing fields {sorted(missing)}, unknown fields {sorted(extra)}")
    for f in ("source_hash", "options", "dtype"):
        if not isinstance(e[f], str) or not e[f]:
            raise DatabaseError(f"{where}: {f!r} must be a non-empty string, got {_short(e[f])}")
        if len(e[f]) > MAX_FIELD_CHARS[f]:
            raise DatabaseError(f"{where}: {f!r} has {len(e[f])} characters, at most {MAX_FIELD_CHARS[f]} expected")
    try:
        dt = dtype_lookup(e["dtype"])
    except Exception:
        raise DatabaseError(f"{where}: dtype {e['dtype']!r} is not an isthmus dtype") from None
    if family is not None and dt.name not in family.dtypes:
        raise DatabaseError(f"{where}: {kernel} has no dtype {dt.name} (it has {', '.join(family.dtypes)})")
    dev = e["device"]
    if not isinstance(dev, dict) or set(dev) != set(_DEVICE_FIELDS) or not all(
            isinstance(dev[f], str) and len(dev[f]) <= MAX_DEVICE_CHARS for f in _DEVICE_FIELDS):
        raise DatabaseError(f"{where}: 'device' must be an object of strings {list(_DEVICE_FIELDS)} (at most "
                            f"{MAX_DEVICE_CHARS} characters each), got {_short(dev)}")
    bucket = e["bucket"]
    names = list(family.problem) if family is not None else list(bucket) if isinstance(bucket, dict) else None
    if isinstance(bucket, list) and 0 < len(bucket) == len(names or bucket):  # sizes in the kernel's order
        bucket = dict(zip(names or [f"#{j}" for j in range(len(bucket))], bucket))
    if not isinstance(bucket, dict) or not bucket or set(bucket) != set(names or bucket):
        raise DatabaseError(f"{where}: 'bucket' must name the problem sizes "
                            f"{list(family.problem) if family is not None else '(its sizes)'}, got {_short(bucket)}")
    for name, v in bucket.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > MAX_BUCKET or v & (v - 1):
            raise DatabaseError(f"{where}: bucket {name} = {_short(v)} must be a power of two from 1 to 2**62")
    params = e["params"]
    if not isinstance(params, dict):
        raise DatabaseError(f"{where}: 'params' must be an object, got {type(params).__name__}")
    if family is None:  # its tunables unknown here: any JSON numbers, stored as given
        if not params or not all(isinstance(k, str) and (_is_number(v) or isinstance(v, str) and len(v) <= 64)
                                 for k, v in params.items()):
            raise DatabaseError(f"{where}: 'params' must map tunable names to numbers, got {_short(params)}")
        return (_keyrow(kernel, e, dev, dt, [bucket[p] for p in bucket]), canonical(params),
                *_times(where, e))
    tunable_names = {t.name for t in family.tunables}
    if set(params) != tunable_names:
        raise DatabaseError(f"{where}: params {_short(sorted(params))} are not {kernel}'s tunables "
                            f"{sorted(tunable_names)}")
    for t in family.tunables:
        v = params[t.name]
        if type(v) is not type(t.default) or v not in t.values:
            raise DatabaseError(f"{where}: params {t.name} = {_short(v)} is out of the space (one of "
                                f"{', '.join(map(str, t.values))})")
    problem = dict(bucket)
    if not any(family.is_valid(params, limits, problem, dt) for limits in _UNLIMITED):
        raise DatabaseError(f"{where}: params {_params(params)} at bucket {_params(bucket)}: "
                            f"{_broken(family, params, problem, dt)}")
    return (_keyrow(kernel, e, dev, dt, [bucket[p] for p in family.problem]), canonical(params), *_times(where, e))


def _times(where: str, e: dict) -> tuple[float, float | None]:
    time_ms = e["time_ms"]
    if not _is_time(time_ms):
        raise DatabaseError(f"{where}: 'time_ms' must be a positive, finite number, got {_short(time_ms)}")
    default_ms = e.get("default_ms")
    if default_ms is not None and not _is_time(default_ms):
        raise DatabaseError(f"{where}: 'default_ms' must be a positive, finite number or null, got {_short(default_ms)}")
    return float(time_ms), None if default_ms is None else float(default_ms)


def _keyrow(kernel: str, e: dict, dev: dict, dt, bucket: list) -> tuple:
    return (kernel, e["source_hash"], e["options"], dev["backend"], dev["vendor"], dev["name"], dev["driver"],
            dt.name, json.dumps(bucket))


def undeclared(doc) -> list[str]:
    """The kernels a (validated) document has entries for that this process does not know: stored
    as given by an import, used once a kernel of that name is declared with the same source."""
    return sorted({e["kernel"] for e in doc["entries"] if kernel_family(e["kernel"]) is None})


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())


@functools.lru_cache(maxsize=256)
def _only(family, restriction: str):
    """``family`` with one of its restrictions alone (which clause a config breaks)."""
    return dataclasses.replace(family, restrictions=(restriction,))


def _broken(family, params: dict, problem: dict, dt) -> str:
    """What a config breaks: a tunable set outside its variant, or the restriction clauses that
    fail (as a GPU or as a CPU, whichever breaks fewer: the one the entry was meant for)."""
    for t in family.tunables:
        if params[t.name] != t.default and not t.applies(params):
            return (f"{t.name} = {params[t.name]} is set, but {t.name} applies only where "
                    + " and ".join(f"{name} is one of {', '.join(map(str, values))}" for name, values in t.conditions())
                    + f" (elsewhere it stays {t.default})")
    failing = min(([r for r in family.restrictions if not _only(family, r).is_valid(params, limits, problem, dt)]
                   for limits in _UNLIMITED), key=len)
    return f"{'these restrictions' if len(failing) > 1 else 'this restriction'} of {family.name} fail: " + (
        "; ".join(failing) or "(none alone: their combination)")


def split_stale(rows: list[tuple]) -> tuple[list[tuple], int]:
    """(rows tuned for the kernel sources this isthmus has, how many others): a row whose
    source_hash or options are not the kernel's current ones (an older isthmus, or an edited
    file) would never be used by a launch, and stored beside the current row it would be a second
    "best" for the same kernel, device, dtype and bucket."""
    current, stale = [], 0
    for row in rows:
        kernel, source_hash, options, dtype = row[0][0], row[0][1], row[0][2], row[0][7]
        family = kernel_family(kernel)  # (None: a kernel not declared in this process; nothing to compare)
        if family is None or fingerprint(family, dtype) == (source_hash, options):
            current.append(row)
        else:
            stale += 1
    return current, stale


def _is_time(v) -> bool:
    if not _is_number(v):
        return False
    try:
        return math.isfinite(float(v)) and float(v) > 0  # an int beyond float's range overflows here
    except OverflowError:
        return False


def _short(v) -> str:
    """``repr(v)`` cut to a readable length (a bad value may be megabytes long)."""
    try:
        text = repr(v)
    except ValueError:  # an int beyond Python's digit limit for str()
        return f"an integer of about {v.bit_length() * 30103 // 100000} digits"
    return text if len(text) <= 120 else text[:100] + f"... ({len(text)} characters)"


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
