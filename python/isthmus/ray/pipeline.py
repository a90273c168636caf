"""The pipeline inside a device actor: upload, compute, download of shards on one device, so that
with several shards in flight the copies of one overlap the kernels of another.

Each in-flight shard runs ``Pipeline.run`` on its own thread (the actor is a threaded Ray actor).
Stages, per shard:

1. take a slot (a set of device buffers kept across shards) and upload the shard's arrays into it
   on the transfer lane (`Device._transfer_lane`), while another shard's kernels run on the device queue;
2. under the enqueue lock, call the task (it queues its kernels on the device's queue) and record a
   marker after them; the lock is released at once, so the next shard's kernels queue right behind
   and the device does not idle between shards;
3. wait for the marker, copy the results to the host on the lane (while the next shard computes),
   close them, give the slot back.

What overlaps, by backend: on CUDA the lane is a second stream, so the copy engines move shard i+1
in and shard i-1 out while shard i's kernels run; on OpenCL it is a second command queue, which a
GPU driver runs on its DMA engines and PoCL on its worker threads beside the kernels; on either,
the Ray side (fetching a shard from the object store, storing a result) runs in other threads
while the device computes. ``depth`` slots bound the device memory held: ``depth`` shards' inputs.
"""
from __future__ import annotations

import queue
import threading

import numpy as np

from isthmus.buffer import Buffer
from isthmus.device import Device

from .shards import task_outputs


class _Slot:
    """Device buffers that receive one shard's arrays; reused while the shapes and dtypes repeat."""

    def __init__(self):
        self.buffers: list[Buffer] = []

    def load(self, device: Device, lane, arrays: tuple[np.ndarray, ...]) -> list[Buffer]:
        for k, a in enumerate(arrays):
            buf = self.buffers[k] if k < len(self.buffers) else None
            if buf is not None and buf.shape == a.shape and buf.dtype == a.dtype:
                if buf.nbytes:
                    lane.upload(buf, a)  # no kernel uses buf now: its last shard's marker was waited for
                continue
            if buf is not None:
                buf.close()
            # A new buffer may be memory the device's pool just took back from a task whose kernels
            # are still queued: write it through the device queue, which runs after them.
            buf = device.asarray(a)
            if k < len(self.buffers):
                self.buffers[k] = buf
            else:
                self.buffers.append(buf)
        for extra in self.buffers[len(arrays):]:
            extra.close()
        del self.buffers[len(arrays):]
        return list(self.buffers)

    def close(self) -> None:
        for buf in self.buffers:
            buf.close()
        self.buffers.clear()


class Pipeline:
    """Runs shards on ``device`` with up to ``depth`` of them in flight (one per calling thread).

    >>> pipe = Pipeline(isthmus.device(), depth=3)
    >>> pipe.run(lambda dev, bufs: isthmus.ops.softmax(bufs[0]), (np.ones((4, 5), np.float32),), 0)
    """

    def __init__(self, device: Device, depth: int = 3):
        self.device = device
        self._lane = device._transfer_lane()
        self._enqueue = threading.Lock()
        self._slots: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
        for _ in range(max(1, depth)):
            self._slots.put(_Slot())

    def run(self, call, arrays: tuple[np.ndarray, ...], index: int):
        """Upload ``arrays``, run ``call(device, buffers)``, return its results on the host: one
        NumPy array, or a tuple when the task returned several."""
        slot = self._slots.get()
        try:
            return self._run(slot, call, arrays, index)
        finally:
            self._slots.put(slot)

    def _run(self, slot: _Slot, call, arrays, index: int):
        device = self.device
        inputs = slot.load(device, self._lane, arrays)
        marker = None
        try:
            with self._enqueue:
                produced = call(device, inputs)
                marker = device._record()
        finally:
            # Even when the task failed, kernels it queued may still read the slot's buffers.
            self._lane.wait(marker if marker is not None else device._record())
        outputs, single = task_outputs(produced, index)
        try:
            host = [self._to_host(o) for o in outputs]
        finally:
            _close_results(outputs, inputs)
        return host[0] if single else tuple(host)

    def _to_host(self, result):
        if not isinstance(result, Buffer):
            return result
        if result.device is not self.device:  # the task used another device too: its own queue's copy
            return result.to_numpy()
        return self._lane.download(result)

    def close(self) -> None:
        """Free the slots' device memory (the pipeline is not used afterwards)."""
        while True:
            try:
                self._slots.get_nowait().close()
            except queue.Empty:
                return


def _close_results(outputs: list, inputs: list[Buffer]) -> None:
    """Close the task's result buffers, except those that are (views of) the slot's own inputs."""
    kept = {id(b._mem) for b in inputs if not b.closed}
    for o in outputs:
        if isinstance(o, Buffer) and not o.closed and id(o._mem) not in kept:
            o.close()
