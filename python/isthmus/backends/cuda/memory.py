"""CudaDevice's memory: allocations from CuPy's pool tied to the device's stream, copies, pinned
host memory, and views of device memory for CuPy, DLPack and ``__cuda_array_interface__``."""
from __future__ import annotations

from ...device import _TransferLane
from ...errors import DeviceError, OutOfMemoryError


class _Memory:
    """The memory hooks of :class:`~.device.CudaDevice` (a part of it)."""

    def _alloc(self, nbytes: int):
        try:
            # CuPy's pool reuses a freed block on the stream it was allocated on. The legacy default
            # stream synchronizes with this device's (blocking) stream both ways, so a block tied to
            # it is safe; any other current stream of the calling thread (a user's stream, the
            # per-thread default stream) is not, and the allocation is tied to ours instead.
            if self._get_device() == self.index:
                if self._current_stream().ptr == 0:
                    return self._cp_alloc(nbytes)
                with self.stream:
                    return self._cp_alloc(nbytes)
            with self._cp_device, self.stream:
                return self._cp_alloc(nbytes)
        except self._cp.cuda.memory.OutOfMemoryError as exc:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {self.id}: {exc}") from exc

    def _transfer_lane(self):
        with self._cp_device:  # non-blocking: it does not wait for the device's own stream
            return _TransferLane(self, self._cp.cuda.Stream(non_blocking=True), wait=lambda event: event.synchronize())

    def _free_pool(self) -> None:
        with self._cp_device:
            self._cp.get_default_memory_pool().free_all_blocks()

    def _memory_in_use(self) -> int:
        with self._cp_device:
            return self._cp.get_default_memory_pool().used_bytes()

    def _pointer(self, mem) -> int:
        return int(mem.ptr)

    def _guard(self, fn, what: str):
        cp = self._cp
        try:
            with self._cp_device:
                return fn()
        except cp.cuda.memory.OutOfMemoryError as exc:
            raise OutOfMemoryError(f"{what} on {self.id}: {exc}") from exc
        except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as exc:
            raise DeviceError(f"{what} on {self.id} failed: {exc}") from exc

    def _upload(self, mem, host, stream=None):
        self._host_copy(mem.copy_from_host_async, host, stream or self.stream, "host->device copy")

    def _download(self, mem, host, stream=None):
        self._host_copy(mem.copy_to_host_async, host, stream or self.stream, "device->host copy")

    def _host_copy(self, copy, host, stream, what: str):
        def run():
            copy(host.ctypes.data, host.nbytes, stream)
            stream.synchronize()  # the host array may be freed as soon as we return
        self._guard(run, what)

    def _copy(self, dst, src, nbytes, stream=None):
        self._guard(lambda: dst.copy_from_device_async(src, nbytes, stream or self.stream), "device copy")

    def _zero(self, mem, nbytes, stream=None):
        self._guard(lambda: mem.memset_async(0, nbytes, stream or self.stream), "fill")

    def _empty_host(self, shape, dtype):
        import cupyx

        with self._cp_device:
            return cupyx.empty_pinned(shape, dtype)

    def _cupy_view(self, buf):
        with self._cp_device:
            return self._cp.ndarray(buf.shape, buf.dtype, memptr=buf._handle())

    def _dlpack(self, buf, stream):
        return self._cupy_view(buf).__dlpack__(stream=stream)

    def _dlpack_device(self) -> tuple:
        return (2, self.index)  # kDLCUDA

    def _array_interface(self, buf) -> dict:
        return {"shape": buf.shape, "typestr": buf.dtype.str, "descr": [("", buf.dtype.str)],
                "data": (buf._ptr, False), "strides": None, "version": 3, "stream": self.stream.ptr or 1}

    def _vendor_call(self, make, buffers: list):
        fn = make([self._cupy_view(b) for b in buffers])

        def run():
            with self._cp_device, self.stream:
                fn()
        return run

