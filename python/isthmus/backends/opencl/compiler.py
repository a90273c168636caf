"""OpenCLDevice's compiler: programs built from source (or loaded from a cached binary) with
PyOpenCL's low-level ``_Program``, kernels, and a kernel's limits from the driver."""
from __future__ import annotations

from ...errors import CompileError
from ...launch import KernelLimits
from . import pocl


class _Compiler:
    """The compiling hooks of :class:`~.device.OpenCLDevice` (a part of it)."""

    def _prepare_source(self, source: str) -> str:
        return source

    def _compiler_id(self) -> dict:
        return {"pyopencl": self._cl.VERSION_TEXT, "device_version": self._dev.version,
                "opencl_c": getattr(self._dev, "opencl_c_version", "")}

    def _build(self, source: str, options: list[str], name: str):
        cl = self._cl
        prg = cl._cl._Program(self.context, source)
        try:
            prg.build(" ".join(options).encode(), [self._dev])
        except cl.Error as exc:
            try:
                log = prg.get_build_info(self._dev, cl.program_build_info.LOG)
            except cl.Error:
                log = str(exc)
            raise CompileError(f"kernel {name!r} failed to compile for {self.id} ({self.name})",
                               log=log or str(exc), kernel_name=name) from None
        return prg

    def _binary(self, native) -> bytes | None:
        binaries = native.get_info(self._cl.program_info.BINARIES)
        return bytes(binaries[0]) if binaries and binaries[0] else None

    def _load_binary(self, binary: bytes, options: list[str]):
        prg = self._cl._cl._Program(self.context, [self._dev], [binary])
        prg.build(" ".join(options).encode(), [self._dev])
        return prg

    def _function(self, native, name: str):
        cl = self._cl
        try:
            return cl.Kernel(native, name)
        except cl.Error as exc:
            raise CompileError(f"program has no kernel {name!r}: {exc}", kernel_name=name) from None

    def _kernel_limits(self, kernel) -> KernelLimits:
        cl = self._cl
        info = cl.kernel_work_group_info
        try:
            wg, local, private = (int(kernel.native.get_work_group_info(what, self._dev))
                                  for what in (info.WORK_GROUP_SIZE, info.LOCAL_MEM_SIZE, info.PRIVATE_MEM_SIZE))
        except cl.Error:  # a driver that does not answer: the device's limits, and the driver's refusal
            return KernelLimits(self.max_work_group_size, 0, None)
        if local == 0 and self.platform.startswith("Portable Computing Language"):
            # PoCL 4-6 answer 0, then abort the process at launch if it does not fit: the binary says (pocl.py)
            sizes = pocl.local_sizes(self._binary(kernel.program.native) or b"", kernel.name)
            local = pocl.local_bytes(sizes) if sizes else 0
        return KernelLimits(wg, local, private)
