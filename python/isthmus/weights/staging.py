"""Copying checkpoint files into device buffers through two pinned staging buffers.

Each file is memory-mapped and read chunk by chunk into one of two pinned ("page-locked") host
buffers; the pieces of the tensors in a chunk are queued as non-blocking copies into their buffers
(OpenCL events, a CUDA stream), and the next chunk is read into the other staging buffer while they
run. A staging buffer is refilled once the copies out of it are done. The host holds the two
staging buffers and the map's pages of the chunk being read; read pages are dropped from the map
(the page cache keeps them), so resident memory does not grow with the file.
"""
from __future__ import annotations

import ctypes
import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from .. import knobs
from ..buffer import Buffer
from ..errors import FormatError
from .checkpoint import File

if TYPE_CHECKING:  # pragma: no cover
    from ..device import Device


def copy_in(device: "Device", files: list[File], buffers: dict[str, Buffer]) -> None:
    """Every file's data into the buffers through two pinned staging slots: a slot is refilled
    from the file once the copies queued out of it are done, while those of the other run."""
    chunk = min(knobs.load_staging_bytes(), max((f.data_len for f in files), default=0))
    if chunk == 0:
        return
    slots = [_Slot(device.empty_host((chunk,), np.uint8)) for _ in range(2)]
    readers = _Readers(chunk)
    turn = 0
    try:
        for f in files:
            with _Mapped(f, readers) as data:
                for start, stop, pieces in _pieces(f, chunk):
                    slot = slots[turn % 2]
                    turn += 1
                    slot.wait()
                    data.read(start, stop, slot.host)
                    for t, offset, a, b in pieces:
                        slot.done.append(device.allocator.upload_async(buffers[t.name]._handle(), offset,
                                                                       slot.host[a:b]))
        for slot in slots:
            slot.wait()
    finally:
        readers.close()
        for slot in slots:  # after an error: no copy may still read a staging slot once it is freed
            slot.wait(settle=True)


def _pieces(f: File, chunk: int):
    """(start, stop, pieces) for each chunk of ``f``'s data: what of each tensor lies in it, as
    (tensor, byte offset in the tensor, begin and end in the chunk)."""
    tensors = [t for t in f.tensors if t.end > t.begin]
    i = 0
    for start in range(0, f.data_len, chunk):
        stop = min(start + chunk, f.data_len)
        pieces = []
        while i < len(tensors) and tensors[i].begin < stop:
            t = tensors[i]
            a, b = max(t.begin, start), min(t.end, stop)
            pieces.append((t, a - t.begin, a - start, b - start))
            if t.end > stop:
                break
            i += 1
        yield start, stop, pieces


class _Slot:
    """A pinned staging buffer and the copies out of it still queued (``done``: what waits for each)."""

    def __init__(self, host: np.ndarray):
        self.host = host
        self.done: list = []

    def wait(self, settle: bool = False) -> None:
        """Until every copy out of the slot is done; then the first error, unless ``settle`` (after
        an error, which is what the caller raises)."""
        done, self.done = self.done, []
        error = None
        for wait in done:
            try:
                wait()
            except Exception as exc:  # noqa: BLE001 - the others are waited for all the same
                error = error or exc
        if error is not None and not settle:
            raise error


class _Mapped:
    """A file's data through a read-only memory map; pages already read are dropped from the map
    (the page cache keeps them), so the process's resident memory does not grow with the file."""

    def __init__(self, f: File, readers: "_Readers"):
        self.f, self.readers = f, readers
        with open(f.path, "rb") as fh:
            # (the map must not reach past the file's end: a read there is SIGBUS, not an error)
            if os.fstat(fh.fileno()).st_size != f.data_start + f.data_len:
                raise FormatError(f"{f.path} changed size while it was being loaded")
            self.map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.data = np.frombuffer(self.map, np.uint8)  # (what gives the map's address)
        self.dropped = 0
        self._advise("MADV_SEQUENTIAL", 0, len(self.map))

    def read(self, start: int, stop: int, into: np.ndarray) -> None:
        base = self.f.data_start
        self.readers.copy(into.ctypes.data, self.data.ctypes.data + base + start, stop - start)
        keep = (base + stop) // mmap.PAGESIZE * mmap.PAGESIZE
        self._advise("MADV_DONTNEED", self.dropped, keep - self.dropped)
        self.dropped = keep

    def _advise(self, what: str, start: int, length: int) -> None:
        flag = getattr(mmap, what, None)  # (Linux's; elsewhere pages stay mapped until close)
        if flag is not None and length > 0:
            self.map.madvise(flag, start, length)

    def __enter__(self) -> "_Mapped":
        return self

    def __exit__(self, *exc) -> None:
        self.data = None  # (a map with a NumPy view on it cannot close)
        self.map.close()


class _Readers:
    """Copies from the map into a staging buffer: ``ctypes.memmove``, which releases the GIL
    (NumPy's assignment read 35% slower on one thread), split among threads for a large chunk:
    one thread copying from the page cache through a map reads 3-6 GB/s (measured on the 2-core
    PoCL VM; two threads 6.5), far below a GPU's host->device bandwidth."""

    PART = 4 << 20  # the least one thread is given

    def __init__(self, chunk: int):
        self.count = max(1, min(os.cpu_count() or 1, 8, chunk // self.PART))
        self.pool = ThreadPoolExecutor(self.count, thread_name_prefix="isthmus-load") if self.count > 1 else None

    def copy(self, dst: int, src: int, n: int) -> None:
        parts = max(1, min(self.count, n // self.PART))
        if parts == 1:
            ctypes.memmove(dst, src, n)
            return
        step = -(-n // parts)
        list(self.pool.map(lambda at: ctypes.memmove(dst + at, src + at, min(step, n - at)), range(0, n, step)))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
