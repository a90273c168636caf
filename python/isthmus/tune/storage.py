"""Storage of tuned configs: one SQLite file in WAL mode, safe under concurrent writers and killed
processes, and the key its rows are stored under.

A row is keyed by :class:`Key`: schema version (the file's ``user_version``), kernel name, kernel
source hash + compile options, device identity (backend, vendor, name, driver), dtype and
problem bucket (each size rounded up to a power of two). ``runs`` keeps every evaluated config
(params, time, status); ``best`` keeps the fastest correct config per key. Which stored config a
launch uses is :mod:`.lookup`'s policy; the process's databases are :mod:`.db`'s.

A file that is corrupt, truncated or written by a newer schema is moved aside (``*.bad-<time>``)
with a warning and a new database is built in its place: never a crash, never a wrong config.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import socket
import sqlite3
import threading
import time
import urllib.parse
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import DatabaseError
from ..memo import BoundedMemo
from ..ops.spec import problem_bucket

SCHEMA = 1
FORMAT = "isthmus-tuning"  # the "format" of exported JSON documents
STATUSES = ("ok", "compile_error", "launch_error", "timeout", "wrong")
BUSY_TIMEOUT_S = 60.0

_TABLES = f"""
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, source_hash TEXT NOT NULL, options TEXT NOT NULL,
    backend TEXT NOT NULL, vendor TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,
    dtype TEXT NOT NULL, bucket TEXT NOT NULL, problem TEXT NOT NULL, params TEXT NOT NULL,
    time_ms REAL, status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', strategy TEXT NOT NULL DEFAULT '',
    host TEXT NOT NULL DEFAULT '', pid INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS best (
    kernel TEXT NOT NULL, source_hash TEXT NOT NULL, options TEXT NOT NULL,
    backend TEXT NOT NULL, vendor TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,
    dtype TEXT NOT NULL, bucket TEXT NOT NULL, params TEXT NOT NULL, time_ms REAL NOT NULL,
    default_ms REAL, updated REAL NOT NULL,
    PRIMARY KEY (kernel, source_hash, options, backend, vendor, device, driver, dtype, bucket));
CREATE INDEX IF NOT EXISTS best_model ON best (kernel, source_hash, options, backend, vendor, device, dtype);
PRAGMA user_version = {SCHEMA};
"""
_KEY_COLUMNS = ("kernel", "source_hash", "options", "backend", "vendor", "device", "driver", "dtype", "bucket")
_KEYS = ", ".join(_KEY_COLUMNS)


class TuningDatabaseWarning(UserWarning):
    """A tuning database file was unusable and has been moved aside (the warning names both paths)."""


@dataclass(frozen=True)
class Key:
    kernel: str
    source_hash: str
    options: str
    backend: str
    vendor: str
    device: str
    driver: str
    dtype: str
    bucket: tuple[int, ...]

    def row(self) -> tuple:
        return (*(getattr(self, c) for c in _KEY_COLUMNS[:-1]), json.dumps(list(self.bucket)))  # in column order


# ---- keys -------------------------------------------------------------------------------------
_fingerprints = BoundedMemo(1024)


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def code_of(source: str) -> str:
    """The source without its comments and with runs of white space as one space: what a tuned
    config is keyed by, so rewording a kernel's comments keeps its shipped configs current. (No
    kernel has a comment marker inside a string literal.)"""
    return " ".join(_COMMENT.sub(" ", source).split())


def fingerprint(family, dtype_name: str) -> tuple[str, str]:
    """(sha256 of the kernel source, the fixed compile options) of ``family`` for a dtype."""
    memo = (family.name, id(family), dtype_name)
    found = _fingerprints.get(memo)
    if found is None:
        source = hashlib.sha256(code_of(family.source_text()).encode()).hexdigest()
        storage = dict(family.storage).get(dtype_name, "")
        options = json.dumps({"defines": {k: v for k, v in sorted(family.defines)}, "storage": storage},
                             sort_keys=True, separators=(",", ":"))
        found = _fingerprints[memo] = (source, options)
    return found


def key_for(family, device, dtype_name: str, problem: dict) -> Key:
    source, options = fingerprint(family, dtype_name)
    ident = device.identity()
    return Key(family.name, source, options, ident["backend"], ident["vendor"], ident["name"], ident["driver"],
               dtype_name, problem_bucket(family, problem))


def canonical(params: dict) -> str:
    return json.dumps({k: params[k] for k in sorted(params)}, separators=(",", ":"))


def parse_best(bucket, params, dims: int) -> tuple[tuple[int, ...], dict] | None:
    """A stored row's (bucket, params) when both hold what :meth:`Database.record` writes, else None."""
    try:
        b, p = json.loads(bucket), json.loads(params)
    except (TypeError, ValueError, RecursionError):
        return None
    if (not isinstance(b, list) or len(b) != dims or not isinstance(p, dict)
            or not all(type(x) is int and x > 0 for x in b)):
        return None
    return tuple(b), p


# ---- the database -----------------------------------------------------------------------------
class Database:
    """One SQLite tuning database. ``Database(path)`` opens (checking it, rebuilding it when bad);
    ``Database.memory()`` is a private in-memory one (the bundled configs are loaded into one)."""

    def __init__(self, path: Path | str | None, *, readonly: bool = False):
        self.path = None if path is None else Path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self._warned_bad_row = False
        self._conn = self._open()

    @classmethod
    def memory(cls) -> "Database":
        return cls(None)

    # ---- opening, checking, rebuilding ----
    def _connect(self) -> sqlite3.Connection:
        target = ":memory:" if self.path is None else str(self.path)
        conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row  # (a row unpacks as a tuple, or becomes a dict by column)
        return conn

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            conn = self._connect()
            conn.executescript(_TABLES)
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.path):
            problem = _check_file(self.path)
            if problem is not None:
                moved = _move_aside(self.path)
                warnings.warn(f"tuning database {self.path} is unusable ({problem}); moved it to {moved} and "
                              f"started a new one (tuned configs in it are not used)", TuningDatabaseWarning,
                              stacklevel=4)
            conn = self._connect()
            if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(_TABLES)
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: a killed process loses no commit
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise DatabaseError(f"the tuning database {self.path or '(bundled)'} is read-only")
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlock between writers
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # ---- writing ----
    def record(self, key: Key, problem: dict, params: dict, time_ms: float | None, status: str, *,
               error: str = "", strategy: str = "", default_ms: float | None = None) -> None:
        """Store one evaluated config, and make it the key's best when it is correct and faster."""
        if status not in STATUSES:
            raise DatabaseError(f"status {status!r} is not one of {', '.join(STATUSES)}")
        now = time.time()
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO runs ({_KEYS}, problem, params, time_ms, status, error, strategy, host, pid, created) "
                f"VALUES ({','.join('?' * 18)})",
                key.row() + (json.dumps(problem, sort_keys=True), canonical(params), time_ms, status, error[:2000],
                             strategy, socket.gethostname(), os.getpid(), now))
            if status == "ok" and time_ms is not None and math.isfinite(time_ms):
                self._upsert_best(conn, key.row(), canonical(params), time_ms, default_ms, now)

    @staticmethod
    def _upsert_best(conn, keyrow: tuple, params: str, time_ms: float, default_ms, now: float) -> None:
        conn.execute(
            f"INSERT INTO best ({_KEYS}, params, time_ms, default_ms, updated) VALUES ({','.join('?' * 13)}) "
            f"ON CONFLICT ({_KEYS}) DO UPDATE SET params = excluded.params, time_ms = excluded.time_ms, "
            "updated = excluded.updated, default_ms = COALESCE(excluded.default_ms, best.default_ms) "
            "WHERE excluded.time_ms < best.time_ms",
            keyrow + (params, time_ms, default_ms, now))
        if default_ms is not None:
            conn.execute("UPDATE best SET default_ms = ? WHERE " + " AND ".join(f"{c} = ?" for c in _KEY_COLUMNS),
                         (default_ms,) + keyrow)

    def clear(self) -> int:
        """Delete every run and best config; returns how many best configs there were."""
        with self._write() as conn:
            count = conn.execute("SELECT COUNT(*) FROM best").fetchone()[0]
            conn.execute("DELETE FROM runs")
            conn.execute("DELETE FROM best")
        return count

    # ---- reading ----
    def best_rows(self, key: Key) -> list[tuple[str, str, str, tuple[int, ...], dict]]:
        """(vendor, device, driver, bucket, params) of the best configs for ``key``'s kernel, source,
        options, backend and dtype on every device, ordered by device, bucket and params (the
        lookup's tie-break). A row with bad values is left out."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT vendor, device, driver, bucket, params FROM best WHERE kernel = ? AND source_hash = ? AND "
                "options = ? AND backend = ? AND dtype = ? ORDER BY device, bucket, params",
                (key.kernel, key.source_hash, key.options, key.backend, key.dtype)).fetchall()
        found = []
        for vendor, device, driver, bucket, params in rows:
            parsed = parse_best(bucket, params, len(key.bucket))
            if parsed is None:
                self._skipped(key.kernel, bucket, params)
            else:
                found.append((vendor, device, driver) + parsed)
        return found

    def _skipped(self, kernel, bucket, params) -> None:
        # A row with bad values (edited by hand, written by a broken tool) is left out of every
        # lookup; one warning per database says so, instead of an error on every launch.
        if not self._warned_bad_row:
            self._warned_bad_row = True
            warnings.warn(f"tuning database {self.path or '(bundled)'}: skipped a best-config row of {kernel!r} "
                          f"with bad values (bucket {str(bucket)[:80]!r}, params {str(params)[:80]!r}); launches "
                          f"use the other rows or the defaults (retune, or `isthmus db clear`)", TuningDatabaseWarning,
                          stacklevel=3)

    def best(self) -> list[dict]:
        """Every best-config row as stored (a column a tool dropped is simply absent)."""
        with self._lock:
            rows = [dict(row) for row in self._conn.execute("SELECT * FROM best")]
        return sorted(rows, key=lambda r: tuple(str(r.get(c, "")) for c in ("kernel", "backend", "device", "dtype",
                                                                             "bucket")))

    def runs(self, kernel: str | None = None) -> list[dict]:
        with self._lock:
            sql, args = "SELECT * FROM runs", ()
            if kernel is not None:
                sql, args = sql + " WHERE kernel = ?", (kernel,)
            return [dict(row) for row in self._conn.execute(sql + " ORDER BY id", args)]

    def counts(self) -> dict:
        with self._lock:
            return {"runs": self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0],
                    "best": self._conn.execute("SELECT COUNT(*) FROM best").fetchone()[0]}

    # ---- JSON ----
    def export(self) -> dict:
        """The best configs as a JSON-able document (what ``isthmus db export`` writes)."""
        from .exchange import to_entry

        entries, bad = [], 0
        for row in self.best():
            entry = to_entry(row)
            if entry is None:
                bad += 1
            else:
                entries.append(entry)
        if bad:
            warnings.warn(f"tuning database {self.path or '(bundled)'}: {bad} best-config rows with bad values or "
                          f"missing columns were left out", TuningDatabaseWarning, stacklevel=2)
        return {"format": FORMAT, "schema": SCHEMA, "entries": entries}

    def import_document(self, doc, *, source: str = "document", skip_bad: bool = False) -> int:
        """Validate ``doc`` whole, then merge its entries (a faster config wins); all or nothing
        (``skip_bad``: leave out the entries that do not validate)."""
        from .exchange import validate

        rows = validate(doc, source=source, skip_bad=skip_bad)
        now = time.time()
        with self._write() as conn:
            for keyrow, params, time_ms, default_ms in rows:
                self._upsert_best(conn, keyrow, params, time_ms, default_ms, now)
        return len(rows)


def _check_file(path: Path) -> str | None:
    """Why the file at ``path`` is unusable, or None (also None when there is no file yet)."""
    if not path.exists():
        return None
    if path.stat().st_size == 0:
        return None if not Path(str(path) + "-wal").exists() else "empty file with a write-ahead log"
    try:
        # Quoted: a '%', '#' or '?' in the path would otherwise be read as URI syntax (another file
        # opened, or a valid database moved aside).
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=rw"
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA:
                return f"written by a newer isthmus: schema {version}, this one reads {SCHEMA}"
            check = conn.execute("PRAGMA quick_check").fetchall()
            if [r[0] for r in check] != ["ok"]:
                return "integrity check failed: " + "; ".join(str(r[0]) for r in check[:3])
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version == 0 and tables:
                return f"not an isthmus tuning database (tables {', '.join(sorted(tables))})"
            if version == SCHEMA and not {"runs", "best"} <= tables:
                return "tables are missing"
            if 0 < version < SCHEMA:
                return f"schema {version} is older than {SCHEMA}"
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return None


def _move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = path.with_name(f"{path.name}.bad-{stamp}-{os.getpid()}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            os.replace(src, Path(str(moved) + suffix))
    return moved


@contextmanager
def _file_lock(path: Path):
    """Serialize check-and-rebuild between processes (so one never moves aside another's new file)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: SQLite's own locking is all there is
        yield
        return
    with open(str(path) + ".lock", "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
