"""ClCompiler, the OpenCL device's compiler: programs built from source (or loaded from a cached
binary) with PyOpenCL's low-level ``_Program``, kernels, and a kernel's limits from the driver."""
from __future__ import annotations

from ...device import Compiler
from ...errors import CompileError
from ...launch import KernelLimits
from . import pocl


class ClCompiler(Compiler):
    """Programs of one OpenCL device (``device``: the OpenCLDevice that holds this part)."""

    def __init__(self, device):
        self.device = device
        self._cl = device._cl
        self._dev = device._dev

    def prepare_source(self, source: str) -> str:
        return source

    def compiler_id(self) -> dict:
        return {"pyopencl": self._cl.VERSION_TEXT, "device_version": self._dev.version,
                "opencl_c": getattr(self._dev, "opencl_c_version", "")}

    def build(self, source: str, options: list[str], name: str) -> tuple:
        cl = self._cl
        prg = cl._cl._Program(self.device.context, source)
        try:
            # _build, the driver's build itself: PyOpenCL's build() (which it patches in) turns any
            # build log into a CompilerWarning; isthmus keeps the log (Program.build_log) and decides
            prg._build(options=" ".join(options).encode(), devices=[self._dev])
        except cl.Error as exc:
            raise CompileError(f"kernel {name!r} failed to compile for {self.device.id} ({self.device.name})",
                               log=self._log(prg) or str(exc), kernel_name=name) from None
        return prg, self._log(prg)

    def _log(self, prg) -> str:
        try:
            return prg.get_build_info(self._dev, self._cl.program_build_info.LOG) or ""
        except self._cl.Error:
            return ""

    def binary(self, native) -> bytes | None:
        binaries = native.get_info(self._cl.program_info.BINARIES)
        return bytes(binaries[0]) if binaries and binaries[0] else None

    def load_binary(self, binary: bytes, options: list[str]):
        prg = self._cl._cl._Program(self.device.context, [self._dev], [binary])
        prg._build(options=" ".join(options).encode(), devices=[self._dev])
        return prg

    def function(self, native, name: str):
        cl = self._cl
        try:
            return cl.Kernel(native, name)
        except cl.Error as exc:
            raise CompileError(f"program has no kernel {name!r}: {exc}", kernel_name=name) from None

    def kernel_limits(self, kernel) -> KernelLimits:
        cl = self._cl
        info = cl.kernel_work_group_info
        try:
            wg, local, private = (int(kernel.native.get_work_group_info(what, self._dev))
                                  for what in (info.WORK_GROUP_SIZE, info.LOCAL_MEM_SIZE, info.PRIVATE_MEM_SIZE))
        except cl.Error:  # a driver that does not answer: the device's limits, and the driver's refusal
            return KernelLimits(self.device.max_work_group_size, 0, None)
        if local == 0 and self.device.platform.startswith("Portable Computing Language"):
            # PoCL 4-6 answer 0, then abort the process at launch if it does not fit: the binary says (pocl.py)
            sizes = pocl.local_sizes(self.binary(kernel.program.native) or b"", kernel.name)
            local = pocl.local_bytes(sizes) if sizes else 0
        return KernelLimits(wg, local, private)
