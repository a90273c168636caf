"""Transfer lanes: host<->device copies queued apart from the device's compute queue, so the copies
of one shard can run while the kernels of another do.

Every isthmus launch on a device goes to one in-order queue (OpenCL) or stream (CUDA); a copy
queued there waits for every kernel queued before it. A lane is a second queue (OpenCL: another
command queue on the device's context) or stream (CUDA: a non-blocking stream) used only for the
pipeline's copies. Its copies are synchronous for the host (they return when done), so the only
ordering the pipeline must keep is across lanes: a buffer is written by a lane only when no kernel
that uses it is still queued (see pipeline.py), and read by a lane only after the kernels that wrote
it have finished (the pipeline waits on a marker recorded after them).

This reads backend internals (the OpenCL context/queue, the CUDA device and stream); a backend
hook would be the place for it if another part of isthmus needs a second queue.
"""
from __future__ import annotations

import numpy as np

from isthmus.buffer import Buffer
from isthmus.device import Device


class _OpenCLLane:
    """A second in-order command queue on the device's context (same device, same memory)."""

    def __init__(self, device: Device):
        cl = device._cl
        self._cl = cl
        self._device = device
        self._queue = cl.CommandQueue(device.context, device._dev)

    def upload(self, buf: Buffer, host: np.ndarray) -> None:
        cl, queue = self._cl, self._queue
        self._device._guard(lambda: cl.enqueue_copy(queue, buf._handle().cl, host, is_blocking=True),
                            "host->device copy (transfer lane)")

    def download(self, buf: Buffer) -> np.ndarray:
        out = np.empty(buf.shape, buf.dtype)
        if buf.nbytes:
            cl, queue = self._cl, self._queue
            self._device._guard(lambda: cl.enqueue_copy(queue, out, buf._handle().cl, is_blocking=True),
                                "device->host copy (transfer lane)")
        return out

    @staticmethod
    def wait(marker) -> None:
        marker.wait()


class _CudaLane:
    """A non-blocking stream of the device (it does not wait for the device's own stream)."""

    def __init__(self, device: Device):
        self._device = device
        with device._cp_device:
            self._stream = device._cp.cuda.Stream(non_blocking=True)

    def upload(self, buf: Buffer, host: np.ndarray) -> None:
        mem, stream = buf._handle(), self._stream

        def run():
            with self._device._cp_device:
                mem.copy_from_host_async(host.ctypes.data, host.nbytes, stream)
                stream.synchronize()  # the host array may go away as soon as we return
        self._device._guard(run, "host->device copy (transfer lane)")

    def download(self, buf: Buffer) -> np.ndarray:
        out = np.empty(buf.shape, buf.dtype)
        if buf.nbytes:
            mem, stream = buf._handle(), self._stream

            def run():
                with self._device._cp_device:
                    mem.copy_to_host_async(out.ctypes.data, out.nbytes, stream)
                    stream.synchronize()
            self._device._guard(run, "device->host copy (transfer lane)")
        return out

    @staticmethod
    def wait(marker) -> None:
        marker.synchronize()


def lane_for(device: Device):
    """The transfer lane of ``device`` (one per pipeline)."""
    return _CudaLane(device) if device.backend == "cuda" else _OpenCLLane(device)
