"""Storage of tuned configs: one SQLite file in WAL mode, safe under concurrent writers and killed
processes, and the key its rows are stored under.

A row is keyed by :class:`Key`: schema version (the file's ``user_version``), kernel name, kernel
source hash + compile options, device identity (backend, vendor, name, driver), dtype and
problem bucket (each size rounded up to a power of two). ``runs`` keeps every evaluated config
(params, time, status); ``best`` keeps the fastest correct config per key. Which stored config a
launch uses is :mod:`.lookup`'s policy; the process's databases are :mod:`.db`'s.

What is at the path decides what happens (nothing isthmus did not write is ever moved or changed):

- nothing, or an empty file: a new database is made beside it and moved into place in one step;
- an isthmus database: SQLite's ``application_id`` header field (offset 68) holds
  :data:`APPLICATION_ID` ("ISTH"), set when isthmus creates the file. It is readable from the
  first 100 bytes even when the rest of the file is damaged, so only a file isthmus wrote is
  ever recognised as a damaged database of its own, moved aside (``*.bad-<time>``, with a warning)
  and rebuilt. A file made before the field was set (schema 1, tables ``runs`` and ``best``)
  is recognised by its tables while it is readable and gets the field;
- an isthmus database of a newer schema, a folder, another application's SQLite file or any
  other file: :class:`DatabaseError` naming the path and what to do; the file stays as it is;
- a database the process cannot write (a read-only file or folder: a ConfigMap, an image layer):
  opened read-only, so lookups read it and nothing is made beside it: ``immutable=1`` when it has no
  write-ahead log (every commit is in the file; a ``mode=ro`` reader of a WAL database would leave
  ``-wal`` and ``-shm`` files in a writable folder), else SQLite ``mode=ro`` (a writer's log is
  read through its ``-shm``; ``immutable=1`` where no ``-shm`` can be made); every write is a
  :class:`DatabaseError` saying how to use a writable copy.
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
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import jsonsafe
from ..errors import DatabaseError
from ..memo import BoundedMemo
from ..ops.spec import problem_bucket

SCHEMA = 1
APPLICATION_ID = 0x49535448  # "ISTH": SQLite's header field naming the application that owns a file
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
PRAGMA application_id = {APPLICATION_ID};
"""
_KEY_COLUMNS = ("kernel", "source_hash", "options", "backend", "vendor", "device", "driver", "dtype", "bucket")
_KEYS = ", ".join(_KEY_COLUMNS)


class TuningDatabaseWarning(UserWarning):
    """A tuning database was damaged and set aside, had rows with bad values, or could not be read
    for a launch (which then uses the next source); the warning names the path."""


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
        b, p = jsonsafe.loads(bucket), jsonsafe.loads(params)
    except (TypeError, ValueError, RecursionError):
        return None
    if (not isinstance(b, list) or len(b) != dims or not isinstance(p, dict)
            or not all(type(x) is int and x > 0 for x in b)):
        return None
    return tuple(b), p


# ---- the database -----------------------------------------------------------------------------
class Database:
    """One SQLite tuning database. ``Database(path)`` opens the file at ``path`` or makes it (what
    is at the path decides: see the module's docstring; ``readonly`` is set when this process
    cannot write it); ``Database.memory()`` is a private in-memory one (the bundled configs are
    loaded into one)."""

    def __init__(self, path: Path | str | None, *, readonly: bool = False):
        self.path = None if path is None else Path(path)
        self.readonly = readonly
        # CPU cores of the devices its rows were tuned on, by device name, where a document said
        # (the bundled files do): CPU configs apply only to CPUs of a similar core count
        self.tuned_cores: dict[str, int] = {}
        self._lock = threading.RLock()
        self._warned_bad_row = False
        self._conn = self._open()

    @classmethod
    def memory(cls) -> "Database":
        return cls(None)

    # ---- opening, checking, rebuilding ----
    def _connect(self) -> sqlite3.Connection:
        if self.path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            if not self.readonly:
                conn = _connect_file(self.path, "rw")
            elif not Path(str(self.path) + "-wal").exists():
                conn = _connect_file(self.path, "ro", immutable=True)
            else:
                conn = _connect_file(self.path, "ro")
                try:
                    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                except sqlite3.OperationalError:  # a WAL file in a folder where no -shm can be made
                    conn.close()
                    conn = _connect_file(self.path, "ro", immutable=True)
        conn.row_factory = sqlite3.Row  # (a row unpacks as a tuple, or becomes a dict by column)
        return conn

    def _open(self, attempts: int = 3) -> sqlite3.Connection:
        if self.path is None:
            conn = self._connect()
            conn.executescript(_TABLES)
            return conn
        kind = _identify(self.path)
        if kind == "new" and self.readonly:
            raise DatabaseError(f"there is no tuning database at {self.path} to open read-only")
        if kind == "new":
            _create(self.path)
        self.readonly = self.readonly or not _writable(self.path)
        try:
            conn = self._connect()
        except sqlite3.DatabaseError as exc:
            damage = str(exc)
        else:
            try:
                damage = _damage(conn, legacy=kind == "legacy?")
            except BaseException:
                conn.close()
                raise
            if damage is None:
                if kind == "legacy?" and not self.readonly:  # an isthmus file from before APPLICATION_ID
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                if not self.readonly:
                    conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: a killed process loses no commit
                return conn
            conn.close()
        if kind == "legacy?" and damage.startswith(_FOREIGN):
            raise DatabaseError(f"{self.path} is an SQLite database of another application ({damage}), not a tuning "
                                f"database; isthmus leaves it as it is. Point ISTHMUS_TUNING_DB at another file (a "
                                f"new database is made there)")
        if kind == "legacy?":
            raise DatabaseError(f"{self.path} is a damaged SQLite file ({damage}) that isthmus cannot recognise as its "
                                f"own (it does not carry isthmus' application id); isthmus leaves it as it is. Delete "
                                f"it if it is an old isthmus tuning database, or point ISTHMUS_TUNING_DB at another file")
        if self.readonly or attempts <= 1:
            raise DatabaseError(f"the tuning database {self.path} is damaged ({damage})"
                                + (" and read-only, so isthmus cannot set it aside" if self.readonly else "")
                                + ": replace it with a good copy, or point ISTHMUS_TUNING_DB at another path")
        moved = _set_aside(self.path)
        if moved is not None:
            warnings.warn(f"the tuning database {self.path} was damaged ({damage}); isthmus moved it to {moved} and "
                          f"started a new one (its tuned configs are not used)", TuningDatabaseWarning, stacklevel=4)
        return self._open(attempts - 1)

    def read_only_error(self) -> DatabaseError:
        """The error a write to this database raises (also raised before a tuning run starts)."""
        if self.path is None:
            return DatabaseError("the tuning configs bundled with isthmus are read-only")
        return DatabaseError(
            f"the tuning database {self.path} is read-only (the file or its folder cannot be written): launches read "
            f"its configs, but tuning and `isthmus db import` or `clear` cannot store anything in it. To tune, copy it "
            f"to a writable place and point ISTHMUS_TUNING_DB there: cp {self.path} ~/tuning.sqlite && export "
            f"ISTHMUS_TUNING_DB=~/tuning.sqlite")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise self.read_only_error()
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

    def measured(self, key: Key, problem: dict) -> list[tuple[dict, str, float | None]]:
        """(params, status, time_ms) of every run recorded for ``key`` at exactly ``problem``, oldest
        first (what a tuning run resumes from); rows whose params do not parse are left out."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT params, status, time_ms FROM runs WHERE {' AND '.join(c + ' = ?' for c in _KEY_COLUMNS)} "
                "AND problem = ? ORDER BY id", key.row() + (json.dumps(problem, sort_keys=True),)).fetchall()
        found = []
        for params, status, time_ms in rows:
            with suppress(TypeError, ValueError, RecursionError):
                p = jsonsafe.loads(params)
                if isinstance(p, dict) and status in STATUSES and (time_ms is None or _is_time(time_ms)):
                    found.append((p, status, time_ms))
        return found

    def counts(self) -> dict:
        with self._lock:
            return {"runs": self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0],
                    "best": self._conn.execute("SELECT COUNT(*) FROM best").fetchone()[0]}

    def merge(self, rows: list[tuple]) -> None:
        """Store validated best configs (:func:`.exchange.validate`'s rows) in one transaction; a
        faster config wins."""
        now = time.time()
        with self._write() as conn:
            for keyrow, params, time_ms, default_ms in rows:
                self._upsert_best(conn, keyrow, params, time_ms, default_ms, now)


def _is_time(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _identify(path: Path) -> str:
    """What is at ``path``: "new" (nothing, or an empty file), "isthmus" (a file whose header names
    isthmus), "legacy?" (an SQLite file with no application id: isthmus' own if its tables say
    so); anything else is a DatabaseError naming the path, and the file is left as it is."""
    if path.is_dir():
        raise DatabaseError(f"{path} is a folder, not a tuning database file: point ISTHMUS_TUNING_DB at a file "
                            f"(for example {path / 'tuning.sqlite'}, made there on first use)")
    if not path.exists():
        return "new"
    if not path.is_file():
        raise DatabaseError(f"{path} is not a regular file, so it cannot be a tuning database: point "
                            f"ISTHMUS_TUNING_DB at a file path (made there on first use)")
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as exc:
        raise DatabaseError(f"the tuning database {path} cannot be read ({exc.strerror}): fix its permissions, or "
                            f"point ISTHMUS_TUNING_DB at another file") from None
    if not header:
        wal = Path(str(path) + "-wal")
        if wal.exists() and wal.stat().st_size:
            raise DatabaseError(f"{path} is empty but has a write-ahead log {wal}: isthmus cannot tell whose it is "
                                f"and leaves both as they are; delete both, or point ISTHMUS_TUNING_DB elsewhere")
        return "new"
    if header[:16] != _SQLITE_MAGIC or len(header) < 100:
        raise DatabaseError(f"{path} is not a tuning database (not an SQLite file); isthmus leaves it as it is. "
                            f"Point ISTHMUS_TUNING_DB at another path (a new database is made there), or move the "
                            f"file away")
    app, version = int.from_bytes(header[68:72], "big"), int.from_bytes(header[60:64], "big")
    if app == APPLICATION_ID:
        if version > SCHEMA:
            raise DatabaseError(f"the tuning database {path} was written by a newer isthmus (schema {version}; this "
                                f"one reads {SCHEMA}): upgrade isthmus, or point ISTHMUS_TUNING_DB at another file")
        return "isthmus"
    if app == 0:
        return "legacy?"
    raise DatabaseError(f"{path} is an SQLite database of another application (application_id {app:#010x}), not a "
                        f"tuning database; isthmus leaves it as it is. Point ISTHMUS_TUNING_DB at another file")


_FOREIGN = "tables: "


def _damage(conn: sqlite3.Connection, legacy: bool) -> str | None:
    """Why an opened database is not a usable isthmus tuning database, or None."""
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        check = conn.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            return "integrity check failed: " + "; ".join(str(r[0]) for r in check[:3])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if legacy and (version != SCHEMA or not {"runs", "best"} <= tables):
        return f"{_FOREIGN}{', '.join(sorted(tables)) or 'none'}; user_version {version}"
    if not {"runs", "best"} <= tables:
        return "its tables are missing"
    return None


def _uri(path: Path, mode: str, immutable: bool = False) -> str:
    # Quoted: a '%', '#' or '?' in the path would otherwise be read as URI syntax (another file opened).
    return f"file:{urllib.parse.quote(str(path.resolve()))}?mode={mode}" + ("&immutable=1" if immutable else "")


def _connect_file(path: Path, mode: str, immutable: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(_uri(path, mode, immutable), uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                           check_same_thread=False)


def _writable(path: Path) -> bool:
    """Whether this process may write the file and make its -wal and -shm beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def _create(path: Path) -> None:
    """A new, empty database at ``path``, made beside it and linked into place in one step, so no
    process ever sees a half-made file (which it could not recognise as isthmus')."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(f"cannot make the folder of the tuning database {path} ({exc.strerror}): point "
                            f"ISTHMUS_TUNING_DB at a file in a writable folder") from None
    tmp = folder / f".{path.name}.{os.getpid()}-{threading.get_ident()}.new"
    try:
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_TABLES)
        finally:
            conn.close()  # (the last connection checkpoints and removes the -wal: one file to move)
        try:
            os.link(tmp, path)  # fails if another process made it first: theirs is used
        except FileExistsError:
            if path.stat().st_size == 0:
                os.replace(tmp, path)  # an empty file: nothing in it to keep
        except OSError:  # a file system without hard links
            if not path.exists() or path.stat().st_size == 0:
                os.replace(tmp, path)
    except (OSError, sqlite3.Error) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise DatabaseError(f"cannot create the tuning database {path} ({why}): point ISTHMUS_TUNING_DB at a file "
                            f"in a writable folder") from None
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with suppress(FileNotFoundError):
                os.unlink(str(tmp) + suffix)


def _set_aside(path: Path) -> Path | None:
    """Move a damaged isthmus database (and its -wal and -shm) aside; None when another process
    did it first (its new file is left alone). Serialized between processes by a lock on the folder."""
    with _folder_lock(path.parent):
        try:
            if _identify(path) != "isthmus":
                return None
        except DatabaseError:
            return None
        probe = _connect_file(path, "rw")
        try:
            if _damage(probe, legacy=False) is None:
                return None  # another process already replaced it
        finally:
            probe.close()
        moved = path.with_name(f"{path.name}.bad-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(path) + suffix)
            if src.exists():
                os.replace(src, Path(str(moved) + suffix))
        return moved


@contextmanager
def _folder_lock(folder: Path):
    """An exclusive lock on the folder itself (no lock file is left beside the user's files)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: SQLite's own locking is all there is
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)
