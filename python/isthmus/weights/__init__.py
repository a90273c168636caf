"""Named tensors of safetensors checkpoints, loaded straight into device memory.

:func:`load` (``Device.load_safetensors``) reads a checkpoint (:mod:`.checkpoint`: which files, their
checked headers) and copies it into new device buffers (:mod:`.staging`: a memory map, two pinned
staging buffers, copies overlapped with reading), and returns them as a :class:`SafeTensors`.
Every file's header is checked before anything is allocated; on any error everything allocated
is freed again, and a damaged file is a FormatError that says where it is damaged.

>>> weights = dev.load_safetensors("Llama-3.2-1B/")          # a folder, or one .safetensors file
>>> weights["model.embed_tokens.weight"].shape
(128256, 2048)
>>> weights.close()                                          # frees every buffer
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from ..buffer import Buffer
from ..errors import ClosedBufferError
from .checkpoint import Checkpoint, read_header
from .staging import copy_in

if TYPE_CHECKING:  # pragma: no cover
    from ..device import Device

__all__ = ["SafeTensors", "load"]


class SafeTensors(Mapping):
    """The tensors of a checkpoint as device buffers, by name, in the files' order; ``close()``
    (or ``with``) frees them all. The buffers belong to this object: copy one to keep it longer."""

    def __init__(self, source: str, buffers: dict[str, Buffer]):
        self.source = source  # the path it was loaded from, as given
        self._buffers: dict[str, Buffer] | None = buffers

    def _open(self) -> dict[str, Buffer]:
        found = self._buffers
        if found is None:
            raise ClosedBufferError(f"the tensors loaded from {self.source} were closed; load them again")
        return found

    def __getitem__(self, name: str) -> Buffer:
        found = self._open()
        if name not in found:
            raise KeyError(f"no tensor {name!r} in {self.source} ({len(found)} tensors; see names())")
        return found[name]

    def __contains__(self, name) -> bool:
        return name in self._open()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._open()))

    def __len__(self) -> int:
        return len(self._open())

    def names(self) -> list[str]:
        return list(self._open())

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self._open().values())

    def close(self) -> None:
        """Free every buffer (idempotent)."""
        found, self._buffers = self._buffers, None
        for buf in (found or {}).values():
            buf.close()

    def __enter__(self) -> "SafeTensors":
        self._open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._buffers is None else f"{len(self._buffers)} tensors"
        return f"<isthmus.SafeTensors {self.source} ({state})>"


def load(device: "Device", path) -> SafeTensors:
    """The tensors of ``path`` (a .safetensors file, an index .json, or a folder holding
    ``model.safetensors.index.json`` or ``model.safetensors``) as buffers on ``device``.
    Every file is checked before anything is allocated; on any error all is freed."""
    device._host_work("loading safetensors")
    checkpoint = Checkpoint.find(path)
    files = [read_header(p, device) for p in checkpoint.paths]
    checkpoint.check(files)
    buffers: dict[str, Buffer] = {}
    try:
        for f in files:
            for t in f.tensors:
                buffers[t.name] = device.empty(t.shape, t.dtype)
        copy_in(device, files, buffers)
    except BaseException:
        for buf in buffers.values():
            buf.close()
        raise
    return SafeTensors(str(path), buffers)
