"""ClAllocator, the OpenCL device's memory: cl.Buffers counted while referenced and cached by size
for the next allocation (a caching allocator like CuPy's), copies and fills."""
from __future__ import annotations

import threading
import weakref

import numpy as np

from ... import knobs
from ...device import Allocator
from ...errors import DeviceError, OutOfMemoryError


class _Mem:
    """A cl.Buffer with its size; counts the device memory held until the last reference goes.
    It is also a buffer's packed launch argument (``ClLauncher.buffer_arg``): a launch on its way to the
    queue holds it, so the cl.Buffer goes back to the pool only after the launch is enqueued."""

    __slots__ = ("cl", "nbytes", "allocator", "ref", "__weakref__")

    def __init__(self, mem, nbytes: int, allocator: "ClAllocator"):
        self.cl = mem
        self.nbytes = nbytes
        self.allocator = allocator
        self.ref = weakref.ref(self)  # what a kernel's argument memo holds (launch.py)
        with allocator._in_use_lock:
            allocator._in_use += nbytes

    def __del__(self):
        try:
            self.allocator.release(self.cl, self.nbytes)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class ClAllocator(Allocator):
    """Memory of one OpenCL device (``device``: the OpenCLDevice that holds this part)."""

    def __init__(self, device):
        self.device = device
        self._cl = device._cl
        self._in_use = 0
        # Re-entrant: _Mem.__del__ takes it, and a garbage collection can run that finalizer while this
        # thread already holds the lock (inside alloc/release): with a plain Lock the process hangs.
        self._in_use_lock = threading.RLock()
        # A caching allocator like CuPy's: freed buffers are kept by size and handed out again. On an
        # in-order queue that is safe: work on the old owner was enqueued before any on the new one.
        self._pool: dict[int, list] = {}
        self._pooled = 0
        self._pool_limit = None

    def alloc(self, nbytes: int):
        cl, dev = self._cl, self.device
        if nbytes > dev.max_alloc:
            raise OutOfMemoryError(f"{nbytes} bytes exceed the largest allocation {dev.id} allows "
                                   f"({dev.max_alloc} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
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
                mem = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, nbytes)
            except cl.MemoryError:
                self.free_pool()
                mem = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.MemoryError as exc:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {dev.id}: {exc}") from exc
        except cl.Error as exc:
            raise DeviceError(f"allocation of {nbytes} bytes on {dev.id} failed: {exc}") from exc
        return _Mem(mem, nbytes, self)

    def release(self, mem, nbytes: int) -> None:
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

    def free_pool(self) -> None:
        with self._in_use_lock:
            cached, self._pool = self._pool, {}
            self._pooled = 0
        cached.clear()  # released to the driver outside the lock

    def in_use(self) -> int:
        return self._in_use

    def pointer(self, mem) -> int:
        return mem.cl.int_ptr

    def upload(self, mem, host, queue=None):
        self.device._guard(lambda: self._cl.enqueue_copy(queue or self.device.queue, mem.cl, host, is_blocking=True),
                           "host->device copy")

    def download(self, mem, host, queue=None):
        self.device._guard(lambda: self._cl.enqueue_copy(queue or self.device.queue, host, mem.cl, is_blocking=True),
                           "device->host copy")

    def upload_async(self, mem, offset, host):
        # (the event keeps ``host`` alive; PyOpenCL waits for it when it is dropped: the caller keeps it)
        event = self.device._guard(lambda: self._cl.enqueue_copy(self.device.queue, mem.cl, host, dst_offset=offset,
                                                                 is_blocking=False), "host->device copy")
        return lambda: self.device._guard(event.wait, "host->device copy")

    def copy(self, dst, src, nbytes, queue=None):
        self.device._guard(lambda: self._cl.enqueue_copy(queue or self.device.queue, dst.cl, src.cl, byte_count=nbytes),
                           "device copy")

    def zero(self, mem, nbytes, queue=None):
        self.device._guard(lambda: self._cl.enqueue_fill_buffer(queue or self.device.queue, mem.cl, np.uint8(0), 0,
                                                                nbytes), "fill")
