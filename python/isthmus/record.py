"""Recorders (:class:`Recorder`): graph capture's (:mod:`isthmus.graph`), and :func:`recording`,
which runs each launch and keeps it (``isthmus bench`` replays them; tests read what an op launched)."""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from .buffer import Buffer
from .dtypes import lookup

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device


class Recorder:
    """What sees the device work one thread queues on a device while installed there (graph
    capture keeps it, bench records and runs it), instead of patching the device's methods.
    ``Device.launch`` hands it each launch with its unpacked arguments (Buffers and numbers); a
    plan's launch, a device copy or fill runs as without it unless a recorder overrides it."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.kept: list[Buffer] = []  # what temporary() allocated

    def launch(self, device: Device, kernel, gsize, lsize, args: list) -> None: raise NotImplementedError

    def plan(self, plan) -> None:  # a Plan launched on the recording thread
        plan._go()

    def copy(self, device: Device, dst, src, nbytes: int) -> None:
        device.allocator.copy(dst, src, nbytes)

    def zero(self, device: Device, mem, nbytes: int) -> None:
        device.allocator.zero(mem, nbytes)

    def host(self, device: Device, what: str) -> None:
        """A host transfer or synchronization on the recording thread (allowed unless overridden)."""

    def temporary(self, device: Device, nbytes: int, zeroed: bool = False) -> Buffer:
        """Memory for one recorded call's intermediate results (or workspace), kept as long as the
        recording; ``zeroed``: a fill of it recorded first."""
        buf = Buffer._allocate(device, (nbytes,), lookup("uint8"), nbytes)
        self.kept.append(buf)
        if zeroed and nbytes:
            self.zero(device, buf._handle(), nbytes)
        return buf

    def workspace(self, device: Device, nbytes: int) -> Buffer:
        """Memory for a recorded call's workspace (Device._workspace), kept as long as the recording
        and zeroed once, now, not as a recorded step: what is recorded may run many times, and a
        workspace needs no reset between launches."""
        buf = self.temporary(device, nbytes)
        if nbytes:
            device.allocator.zero(buf._handle(), nbytes)
        return buf


_DIRECT = Recorder()  # stands in where none is installed: its defaults run the work (never installed)


class Recording(Recorder):
    """What :func:`recording` saw: ``launches`` as (kernel, global, local, packed args). The packed
    arguments hold their buffers' memory, so replaying the launches never writes memory that was
    handed to another buffer, even where the calls closed the buffers meanwhile."""

    def __init__(self):
        super().__init__()
        self.launches: list = []

    def __len__(self) -> int:
        return len(self.launches)

    def launch(self, device, kernel, gsize, lsize, args) -> None:
        packed = [device.launcher.buffer_arg(v) if v.__class__ is Buffer else v for v in args]
        device.launcher.launch(kernel, gsize, lsize, packed)  # (converts the numbers in place)
        self.launches.append((kernel, gsize, lsize, list(packed)))


@contextlib.contextmanager
def recording(dev):
    """Record every launch the calling thread makes on ``dev`` (at the one launch path, so every
    library op's launches are seen), running each as usual."""
    rec = Recording()
    dev._install(rec, f"{dev.id} is already recording (a graph capture or another bench recording)")
    try:
        yield rec
    finally:
        dev._uninstall(rec)
