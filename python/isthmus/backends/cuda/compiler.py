"""CudaCompiler, the CUDA device's compiler: OpenCL C behind the CUDA prelude, compiled by NVRTC to
a cubin, loaded as a module; a kernel's limits from the driver."""
from __future__ import annotations

import os

from ... import knobs
from ...device import Compiler
from ...errors import CompileError
from ...launch import KernelLimits

# CUfunction_attribute values (cuda.h)
_ATTR_MAX_THREADS, _ATTR_SHARED_BYTES, _ATTR_LOCAL_BYTES = 0, 1, 3


def defines_as_source(options: list[str]) -> str:
    """The ``-DNAME=value`` options as ``#define`` lines. NVRTC applies -D before its built-in header,
    whose templates use names such as T, so defines must go into the source instead."""
    return "".join(f"#define {o[2:].replace('=', ' ', 1)}\n" for o in options if o.startswith("-D"))


class CudaCompiler(Compiler):
    """Programs of one CUDA device (``device``: the CudaDevice that holds this part). The prelude
    and the compiler's identity are read once (they do not change while the process runs)."""

    def __init__(self, device):
        self.device = device
        self._cp = device._cp
        self._prelude = None
        self._id = None

    def prepare_source(self, source: str) -> str:
        if self._prelude is None:
            self._prelude = (knobs.kernel_dir() / "cuda_prelude.h").read_text() + "\n#line 1\n"
        return self._prelude + source

    def compiler_id(self) -> dict:
        if self._id is None:
            from cupy_backends.cuda.libs import nvrtc

            self._id = {"cupy": self._cp.__version__, "nvrtc": list(nvrtc.getVersion()), "arch": self._arch()}
        return self._id

    def _arch(self) -> str:
        # sm_90a: the architecture-specific features of Hopper (wgmma); such a cubin runs on sm_90 only,
        # which is the device it is compiled for
        dev = self.device
        return f"sm_{dev.compute_capability}" + ("a" if dev.wgmma else "")

    def _include_dirs(self) -> list[str]:
        cp = self._cp
        base = os.path.join(os.path.dirname(cp.__file__), "_core", "include")
        cuda_path = cp.cuda.get_cuda_path()
        dirs = (base, os.path.join(base, "cupy", "_cuda", f"cuda-{cp.cuda.runtime.runtimeGetVersion() // 1000}"),
                os.path.join(cuda_path, "include") if cuda_path else "")
        return [d for d in dirs if d and os.path.isdir(d)]

    def _nvrtc_options(self) -> list[str]:
        return [f"-arch={self._arch()}", "-std=c++17", "-default-device",
                *(f"-I{d}" for d in self._include_dirs())]

    def build(self, source: str, options: list[str], name: str) -> tuple:
        from cupy_backends.cuda.libs import nvrtc

        dev = self.device
        source = defines_as_source(options) + source
        flags = self._nvrtc_options() + (["-w"] if "-w" in options else [])
        prog = nvrtc.createProgram(source, f"{name or 'isthmus'}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(prog, flags)
            except nvrtc.NVRTCError as exc:
                raise CompileError(f"kernel {name!r} failed to compile for {dev.id} ({dev.name}) with NVRTC: {exc}",
                                   log=nvrtc.getProgramLog(prog), kernel_name=name) from None
            log = nvrtc.getProgramLog(prog)
            cubin = nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)
        return self.load_binary(cubin, options), (log or "").strip("\x00")

    def binary(self, native) -> bytes | None:
        return native[1]

    def load_binary(self, binary: bytes, options: list[str]):
        with self.device._cp_device:
            module = self._cp.cuda.function.Module()
            module.load(bytes(binary))
        return module, bytes(binary)

    def function(self, native, name: str):
        try:
            with self.device._cp_device:
                return native[0].get_function(name)
        except self._cp.cuda.driver.CUDADriverError as exc:
            raise CompileError(f"program has no kernel {name!r}: {exc}", kernel_name=name) from None

    def kernel_limits(self, kernel) -> KernelLimits:
        get = self._cp.cuda.driver.funcGetAttribute
        ptr = kernel.native.ptr
        with self.device._cp_device:
            return KernelLimits(*(int(get(a, ptr)) for a in (_ATTR_MAX_THREADS, _ATTR_SHARED_BYTES, _ATTR_LOCAL_BYTES)))
