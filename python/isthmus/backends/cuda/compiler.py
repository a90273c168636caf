"""CudaDevice's compiler: OpenCL C behind the CUDA prelude, compiled by NVRTC to a cubin, loaded
as a module; a kernel's limits from the driver."""
from __future__ import annotations

import os

from ... import knobs
from ...errors import CompileError
from ...launch import KernelLimits
from ...program import _options

# CUfunction_attribute values (cuda.h)
_ATTR_MAX_THREADS, _ATTR_SHARED_BYTES, _ATTR_LOCAL_BYTES = 0, 1, 3


def defines_as_source(options: list[str]) -> str:
    """``-DNAME=value`` options as ``#define`` lines. NVRTC applies -D before its built-in header,
    whose templates use names such as T, so defines must go into the source instead."""
    return "".join(f"#define {o[2:].replace('=', ' ', 1)}\n" for o in options)  # (program._options: -DNAME=value)


class _Compiler:
    """The compiling hooks of :class:`~.device.CudaDevice` (a part of it)."""

    def _prepare_source(self, source: str) -> str:
        return (knobs.kernel_dir() / "cuda_prelude.h").read_text() + "\n#line 1\n" + source

    def _compiler_id(self) -> dict:
        from cupy_backends.cuda.libs import nvrtc

        return {"cupy": self._cp.__version__, "nvrtc": list(nvrtc.getVersion()), "arch": self._arch()}

    def _arch(self) -> str:
        # sm_90a: the architecture-specific features of Hopper (wgmma); such a cubin runs on sm_90 only,
        # which is the device it is compiled for
        return f"sm_{self.compute_capability}" + ("a" if self.wgmma else "")

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

    def _build(self, source: str, options: list[str], name: str):
        from cupy_backends.cuda.libs import nvrtc

        source = defines_as_source(options) + source
        prog = nvrtc.createProgram(source, f"{name or 'isthmus'}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(prog, self._nvrtc_options())
            except nvrtc.NVRTCError as exc:
                raise CompileError(f"kernel {name!r} failed to compile for {self.id} ({self.name}) with NVRTC: {exc}",
                                   log=nvrtc.getProgramLog(prog), kernel_name=name) from None
            cubin = nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)
        return self._load_binary(cubin, options)

    def _binary(self, native) -> bytes | None:
        return native[1]

    def _load_binary(self, binary: bytes, options: list[str]):
        with self._cp_device:
            module = self._cp.cuda.function.Module()
            module.load(bytes(binary))
        return module, bytes(binary)

    def _function(self, native, name: str):
        try:
            with self._cp_device:
                return native[0].get_function(name)
        except self._cp.cuda.driver.CUDADriverError as exc:
            raise CompileError(f"program has no kernel {name!r}: {exc}", kernel_name=name) from None

    def _kernel_limits(self, kernel) -> KernelLimits:
        get = self._cp.cuda.driver.funcGetAttribute
        ptr = kernel.native.ptr
        with self._cp_device:
            return KernelLimits(*(int(get(a, ptr)) for a in (_ATTR_MAX_THREADS, _ATTR_SHARED_BYTES, _ATTR_LOCAL_BYTES)))

    def _direct_call(self, kernel, gsize, lsize, args: list) -> tuple:
        src = defines_as_source(_options(kernel.program.defines)) + self._prepare_source(kernel.program.source)
        raw = self._cp.RawKernel(src, kernel.name, options=tuple(self._nvrtc_options()))
        return raw, (tuple(a // b for a, b in zip(gsize, lsize)), lsize, args), {"stream": self.stream}
