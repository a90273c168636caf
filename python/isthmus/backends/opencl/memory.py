"""OpenCLDevice's memory: cl.Buffers counted while referenced and cached by size for the next
allocation (a caching allocator like CuPy's), copies, fills and mapped host memory."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from ... import knobs
from ...device import _TransferLane
from ...errors import DeviceError, OutOfMemoryError

if TYPE_CHECKING:
    from .device import OpenCLDevice


class _Mem:
    """A cl.Buffer with its size; counts the device memory held until the last reference goes.
    It is also a buffer's packed launch argument (``_buffer_arg``): a launch on its way to the
    queue holds it, so the cl.Buffer goes back to the pool only after the launch is enqueued."""

    __slots__ = ("cl", "nbytes", "device", "ref", "__weakref__")

    def __init__(self, mem, nbytes: int, device: "OpenCLDevice"):
        self.cl = mem
        self.nbytes = nbytes
        self.device = device
        self.ref = weakref.ref(self)  # what a kernel's argument memo holds (launch.py)
        with device._in_use_lock:
            device._in_use += nbytes

    def __del__(self):
        try:
            self.device._release(self.cl, self.nbytes)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class _Memory:
    """The memory hooks of :class:`~.device.OpenCLDevice` (a part of it)."""

    def _alloc(self, nbytes: int):
        cl = self._cl
        if nbytes > self.max_alloc:
            raise OutOfMemoryError(f"{nbytes} bytes exceed the largest allocation {self.id} allows "
                                   f"({self.max_alloc} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        reused = None
        with self._in_use_lock:
            free = self._pool.get(nbytes)
            if free:
                self._pooled -= nbytes
                reused = free.pop()  # the most recently freed: likeliest still in the device's caches
                if not free:
                    del self._pool[nbytes]  # a size cached again goes to the back of the eviction order
        if reused is not None:
            return _Mem(reused, nbytes, self)
        try:
            try:
                mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
            except cl.MemoryError:
                self._free_pool()
                mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.MemoryError as exc:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {self.id}: {exc}") from exc
        except cl.Error as exc:
            raise DeviceError(f"allocation of {nbytes} bytes on {self.id} failed: {exc}") from exc
        return _Mem(mem, nbytes, self)

    def _release(self, mem, nbytes: int) -> None:
        """Count ``mem`` freed and cache it for the next allocation of its size. A full cache makes
        room by dropping its oldest buffers (sizes in the order they were cached, each size's
        buffers oldest first), not the one just freed: the newest is the likeliest to be asked for
        again, and handing a buffer back to the driver while kernels that use it are queued can make
        the host wait for them. The dropped buffers go back to the driver when this returns, outside
        the lock."""
        evicted = []
        with self._in_use_lock:
            self._in_use -= nbytes
            limit = self._pool_limit
            if limit is None:
                limit = self._pool_limit = knobs.opencl_pool_bytes()  # read once: a release is on the hot path
            if nbytes > limit:
                return
            pool = self._pool
            while pool and self._pooled + nbytes > limit:
                size = next(iter(pool))
                oldest = pool[size]
                evicted.append(oldest.pop(0))
                self._pooled -= size
                if not oldest:
                    del pool[size]
            pool.setdefault(nbytes, []).append(mem)
            self._pooled += nbytes

    def _free_pool(self) -> None:
        with self._in_use_lock:
            cached, self._pool = self._pool, {}
            self._pooled = 0
        cached.clear()  # released to the driver outside the lock

    def _memory_in_use(self) -> int:
        return self._in_use

    def _pointer(self, mem) -> int:
        return mem.cl.int_ptr

    def _upload(self, mem, host, queue=None):
        self._guard(lambda: self._cl.enqueue_copy(queue or self.queue, mem.cl, host, is_blocking=True),
                    "host->device copy")

    def _download(self, mem, host, queue=None):
        self._guard(lambda: self._cl.enqueue_copy(queue or self.queue, host, mem.cl, is_blocking=True),
                    "device->host copy")

    def _copy(self, dst, src, nbytes):
        self._guard(lambda: self._cl.enqueue_copy(self.queue, dst.cl, src.cl, byte_count=nbytes), "device copy")

    def _zero(self, mem, nbytes):
        self._guard(lambda: self._cl.enqueue_fill_buffer(self.queue, mem.cl, np.uint8(0), 0, nbytes), "fill")

    def _empty_host(self, shape, dtype):
        cl = self._cl
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.empty(shape, dtype)
        mem = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
        # The mapped array keeps its buffer alive; unmapping happens when the array is collected.
        return cl.enqueue_map_buffer(self.queue, mem, cl.map_flags.READ | cl.map_flags.WRITE, 0, shape, dtype,
                                     is_blocking=True)[0]

    def _transfer_lane(self):
        # a second in-order command queue on the device's context (same device, same memory)
        return _TransferLane(self, self._cl.CommandQueue(self.context, self._dev), wait=lambda event: event.wait())

    def _guard(self, fn, what: str):
        cl = self._cl
        try:
            return fn()
        except cl.MemoryError as exc:
            raise OutOfMemoryError(f"{what} on {self.id}: {exc}") from exc
        except cl.Error as exc:
            raise DeviceError(f"{what} on {self.id} failed: {exc}") from exc

