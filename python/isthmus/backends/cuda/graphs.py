"""The CUDA device's graphs: a captured isthmus Graph replayed as one instantiated CUDA graph, and
the one-kernel graph of a prepared launch that repeats."""
from __future__ import annotations

import warnings

from ...errors import DeviceError


def capture(dev, steps) -> object:
    """A CUDA graph of ``steps`` (callables taking the stream to queue on) on ``dev``, captured on a
    private stream, so work other threads queue on its stream meanwhile is not captured, in relaxed
    mode, so their allocations and synchronizations stay legal. Raises what the capture raised."""
    cp = dev._cp
    with dev._capture_lock, dev._cp_device:
        if dev._capture_stream is None:
            dev._capture_stream = cp.cuda.Stream(non_blocking=True)
        cs = dev._capture_stream
        cs.begin_capture(mode=getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", 2))
        try:
            for step in steps:
                step(cs)
        finally:
            graph = cs.end_capture()
        upload = getattr(graph, "upload", None)
        if upload is not None:
            upload(dev.stream)  # instantiate now, not on the first replay
    return graph


def replay(dev, steps: tuple):
    """A captured isthmus Graph's steps as one instantiated CUDA graph (see capture), replayed on
    the device's stream with one call."""
    native = capture(dev, steps) if steps else None

    def go() -> None:
        if native is None:  # a capture that recorded nothing
            return
        try:
            if dev._get_device() != dev.index:
                with dev._cp_device:
                    native.launch(dev.stream)
            else:
                native.launch(dev.stream)
        except Exception as exc:  # CUDARuntimeError
            raise DeviceError(f"graph launch on {dev.id} failed: {exc}") from exc
    return go


def one_kernel(dev, prepared):
    """The CUDA graph of one prepared launch, or None (with a warning, once) where capture fails."""
    if not dev._launch_graphs:  # failed before (or turned off): do not try again
        return None
    try:
        return capture(dev, (prepared.enqueue,))
    except Exception as exc:  # noqa: BLE001 - the driver call works: stay with it, and say so once
        dev._launch_graphs = False
        warnings.warn(f"{dev.id}: capturing a repeated launch as a CUDA graph failed ({exc}); repeated "
                      f"launches stay driver calls", RuntimeWarning, stacklevel=3)
        return None
