"""The program cache: compiled binaries kept on disk between processes (the bounded memo of
compiled programs per device is :class:`isthmus.memo.BoundedMemo`).

A disk entry is never trusted by its file name. Each one starts with a header (magic, format
version, payload length, SHA-256 of the payload, and the hash of the recipe it was built from);
an entry is handed to the driver only when all of them match, because a driver that is given a
truncated or foreign binary may abort the process (PoCL asserts in ``pocl_binary_deserialize``)
before any code could delete the entry, and then every later process dies the same way. Anything
unreadable, mismatching, truncated or not a regular file is a miss: removed and rebuilt.
"""
from __future__ import annotations

import hashlib
import os
import stat
import struct
import tempfile
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from . import knobs

FORMAT = 2  # 1: raw driver binaries without a header
MAGIC = b"ISTHMUS-PROGRAM\0"
_HEADER = struct.Struct("<16sIQ32s32s")  # magic, format, payload length, payload sha256, recipe sha256
_MAX_ENTRY = 1 << 30  # no compiled program is this large: a bigger file is not one of ours
_STALE_TMP_S = 3600  # a temp file this old belongs to a writer that died
_CAN_CHECK_PIDS = os.name == "posix"  # os.kill(pid, 0) probes on POSIX; elsewhere it would signal


def entry_path(key: str) -> Path:
    """Where the program with recipe hash ``key`` (64 hex digits) is stored."""
    return knobs.cache_dir() / f"programs-v{FORMAT}" / key[:2] / f"{key}.bin"


# ---- entries ---------------------------------------------------------------------------------
def pack(key: str, payload: bytes) -> bytes:
    """``payload`` (a driver binary) with the header that lets a reader verify it."""
    return _HEADER.pack(MAGIC, FORMAT, len(payload), hashlib.sha256(payload).digest(), bytes.fromhex(key)) + payload


def unpack(key: str, data: bytes) -> bytes | None:
    """The payload of entry ``data`` if it is a complete, intact entry for recipe ``key``, else None."""
    if len(data) < _HEADER.size:
        return None
    magic, fmt, length, digest, recipe = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if (magic != MAGIC or fmt != FORMAT or recipe != bytes.fromhex(key) or length != len(payload)
            or hashlib.sha256(payload).digest() != digest):
        return None
    return payload


def read(key: str) -> bytes | None:
    """The verified payload stored for ``key``, or None (a miss). A bad entry is removed, and so
    is one that a process died while handing to its driver (see :func:`loading`)."""
    path = entry_path(key)
    if _loader_died(key):
        drop(key)
        return None
    data = _read_regular(path)
    if data is None:
        return None
    payload = unpack(key, data)
    if payload is None:
        drop(key)
        return None
    with suppress(OSError):
        os.utime(path)  # eviction removes the least recently used entries first: a hit counts as a use
    return payload


def _read_regular(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of plausible size; never blocks on a FIFO or
    device node, and removes whatever non-regular file sits at the entry's path."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY:
        _remove(path)
        return None
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        with os.fdopen(os.open(path, flags), "rb") as f:
            st = os.fstat(f.fileno())  # the path may have been swapped between lstat and open
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY:
                return None
            return f.read(st.st_size + 1)
    except OSError:
        return None


def _remove(path: Path) -> None:
    # A directory is left alone (it may hold someone's files); the entry simply stays a miss and
    # the write that follows fails quietly.
    with suppress(OSError):
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)


def drop(key: str) -> None:
    """Remove the entry for ``key`` (it failed verification, or the driver refused it)."""
    for marker in _markers(key):
        _unlink_quietly(marker)
    _remove(entry_path(key))


# ---- a driver that dies on an entry ----------------------------------------------------------
# Verification catches damaged and foreign entries, but a driver may still crash on a binary that
# is intact (a driver bug, a library swapped under the same version string). A marker file names
# each process that is handing an entry to its driver; a marker left by a process that no longer
# exists means the driver killed it there, and the next process drops the entry instead of dying
# the same way.
@contextmanager
def loading(key: str):
    """Around the driver call that loads entry ``key``."""
    marker = entry_path(key).with_name(f"{key}.loading-{os.getpid()}") if _CAN_CHECK_PIDS else None
    if marker is not None:
        try:
            marker.touch()
        except OSError:
            marker = None
    try:
        yield
    finally:
        if marker is not None:
            _unlink_quietly(marker)


def _markers(key: str) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(entry_path(key).parent) if e.name.startswith(f"{key}.loading-")]
    except OSError:
        return []


def _loader_died(key: str) -> bool:
    pids = [marker.name.rsplit("-", 1)[-1] for marker in _markers(key)] if _CAN_CHECK_PIDS else []
    return any(pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def write(key: str, payload: bytes) -> None:
    """Store ``payload`` for ``key`` atomically, then evict the oldest entries beyond the size limit.
    A failure (full disk, read-only cache) only costs a recompile next time, and leaves no temp file."""
    path = entry_path(key)
    limit = knobs.program_cache_bytes()
    data = pack(key, payload)
    if limit <= 0 or len(data) > limit:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            _write_all(f, data)
        os.replace(tmp, path)
    except OSError:
        _unlink_quietly(tmp)
        return
    evict(limit)


def _write_all(f, data: bytes) -> None:
    # One named step, so a test can make the write fail as a full disk would.
    f.write(data)


def _unlink_quietly(path) -> None:
    with suppress(OSError):
        os.unlink(path)


def evict(limit: int) -> None:
    """Remove the least recently used entries until the disk cache holds at most ``limit`` bytes;
    temp files left by writers that died are removed too."""
    root = knobs.cache_dir() / f"programs-v{FORMAT}"
    entries, total, now = [], 0, time.time()
    try:
        shards = list(os.scandir(root))
    except OSError:
        return
    for shard in shards:
        try:
            files = list(os.scandir(shard.path)) if shard.is_dir(follow_symlinks=False) else []
        except OSError:
            continue
        for f in files:
            try:
                st = f.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if not f.name.endswith(".bin"):  # loading markers stay until their entry is read
                if f.name.startswith(".tmp-") and now - st.st_mtime > _STALE_TMP_S:
                    _unlink_quietly(f.path)
                continue
            entries.append((st.st_mtime, st.st_size, f.path))
            total += st.st_size
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        _unlink_quietly(path)
        total -= size


# ---- in-memory memo --------------------------------------------------------------------------
