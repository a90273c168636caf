"""CudaAllocator, the CUDA device's memory: allocations from CuPy's pool tied to the device's
stream, copies and fills."""
from __future__ import annotations

from ...device import Allocator
from ...errors import OutOfMemoryError


class CudaAllocator(Allocator):
    """Memory of one CUDA device (``device``: the CudaDevice that holds this part); ``queue``
    arguments are CuPy streams."""

    def __init__(self, device, index: int):
        cp = device._cp
        self.device = device
        self._cp = cp
        self._index = index
        self._get_device = cp.cuda.runtime.getDevice
        self._current_stream = cp.cuda.get_current_stream
        self._cp_alloc = cp.cuda.alloc

    def alloc(self, nbytes: int):
        dev = self.device
        try:
            # CuPy's pool reuses a freed block on the stream it was allocated on. The legacy default
            # stream synchronizes with this device's (blocking) stream both ways, so a block tied to
            # it is safe; any other current stream of the calling thread (a user's stream, the
            # per-thread default stream) is not, and the allocation is tied to ours instead.
            if self._get_device() == self._index:
                if self._current_stream().ptr == 0:
                    return self._cp_alloc(nbytes)
                with dev.stream:
                    return self._cp_alloc(nbytes)
            with dev._cp_device, dev.stream:
                return self._cp_alloc(nbytes)
        except self._cp.cuda.memory.OutOfMemoryError as exc:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {dev.id}: {exc}") from exc

    def free_pool(self) -> None:
        with self.device._cp_device:
            self._cp.get_default_memory_pool().free_all_blocks()

    def in_use(self) -> int:
        with self.device._cp_device:
            return self._cp.get_default_memory_pool().used_bytes()

    def pointer(self, mem) -> int:
        return int(mem.ptr)

    def upload(self, mem, host, queue=None):
        self._host_copy(mem.copy_from_host_async, host, queue or self.device.stream, "host->device copy")

    def download(self, mem, host, queue=None):
        self._host_copy(mem.copy_to_host_async, host, queue or self.device.stream, "device->host copy")

    def _host_copy(self, copy, host, stream, what: str):
        def run():
            copy(host.ctypes.data, host.nbytes, stream)
            stream.synchronize()  # the host array may be freed as soon as we return
        self.device._guard(run, what)

    def upload_async(self, mem, offset, host):
        def run():
            stream = self.device.stream
            (mem + offset).copy_from_host_async(host.ctypes.data, host.nbytes, stream)
            done = self._cp.cuda.Event(block=False, disable_timing=True)
            done.record(stream)
            return lambda: self.device._guard(done.synchronize, "host->device copy")
        return self.device._guard(run, "host->device copy")

    def copy(self, dst, src, nbytes, queue=None):
        self.device._guard(lambda: dst.copy_from_device_async(src, nbytes, queue or self.device.stream), "device copy")

    def zero(self, mem, nbytes, queue=None):
        self.device._guard(lambda: mem.memset_async(0, nbytes, queue or self.device.stream), "fill")
