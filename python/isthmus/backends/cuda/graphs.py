"""CudaDevice's CUDA graphs: a captured isthmus Graph replayed as one instantiated CUDA graph, and
the one-kernel graph of a prepared launch that repeats."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ...errors import DeviceError

if TYPE_CHECKING:
    from .launch import _PreparedLaunch


class _Graphs:
    """The graph hooks of :class:`~.device.CudaDevice` (a part of it)."""

    def _capture_graph(self, steps) -> object:
        """A CUDA graph of ``steps`` (callables taking the stream to queue on), captured on a private
        stream, so work other threads queue on :attr:`stream` meanwhile is not captured, in relaxed
        mode, so their allocations and synchronizations stay legal. Raises what the capture raised."""
        cp = self._cp
        with self._capture_lock, self._cp_device:
            if self._capture_stream is None:
                self._capture_stream = cp.cuda.Stream(non_blocking=True)
            cs = self._capture_stream
            cs.begin_capture(mode=getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", 2))
            try:
                for step in steps:
                    step(cs)
            finally:
                graph = cs.end_capture()
            upload = getattr(graph, "upload", None)
            if upload is not None:
                upload(self.stream)  # instantiate now, not on the first replay
        return graph

    def _graph(self, steps: tuple):
        """A captured isthmus Graph's steps as one instantiated CUDA graph (see _capture_graph),
        replayed on the device's stream with one call."""
        native = self._capture_graph(steps) if steps else None

        def replay() -> None:
            if native is None:  # a capture that recorded nothing
                return
            try:
                if self._get_device() != self.index:
                    with self._cp_device:
                        native.launch(self.stream)
                else:
                    native.launch(self.stream)
            except Exception as exc:  # CUDARuntimeError
                raise DeviceError(f"graph launch on {self.id} failed: {exc}") from exc
        return replay

    def _one_kernel_graph(self, prepared: "_PreparedLaunch"):
        """The CUDA graph of one prepared launch, or None (with a warning, once) where capture fails."""
        if not self._launch_graphs:  # failed before (or turned off): do not try again
            return None
        try:
            return self._capture_graph((prepared.enqueue,))
        except Exception as exc:  # noqa: BLE001 - the driver call works: stay with it, and say so once
            self._launch_graphs = False
            warnings.warn(f"{self.id}: capturing a repeated launch as a CUDA graph failed ({exc}); repeated "
                          f"launches stay driver calls", RuntimeWarning, stacklevel=3)
            return None
