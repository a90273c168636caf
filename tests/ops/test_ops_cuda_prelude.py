"""Every library .cl as CUDA sees it: behind opencl/cuda_prelude.h, through the C preprocessor, for
each op's configs, dtypes and the variant macros its calls decide. A function the kernels call
must be defined there (by the prelude or the kernel source) or be one of the CUDA built-ins the
prelude lists as portable by name; so a kernel calling an OpenCL built-in the prelude does not
map (``rsqrt``, ``convert_float``, ``vload8``) fails here, in CI, not only on the GPU machine.
(NVRTC compiles the same sources on the GPU machine: the op tests and the config sweep.)"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from isthmus import knobs
from isthmus.backends.cuda.compiler import defines_as_source
from isthmus.dtypes import lookup
from isthmus.ops import registry
from isthmus.ops import docs
from isthmus.program import _options

from test_ops_config_sweep import covering  # noqa: E402  (tests/ops is on the path: rootdir-relative import)

CPP = shutil.which("cpp")
pytestmark = pytest.mark.skipif(CPP is None, reason="no C preprocessor (cpp) on this machine")

# What a call decides besides the tunables (its -D variant macros), as a CUDA device has them:
# each is tried at each value on top of every config.
CALL_DEFINES = {"gemm": {"TRANS_A": (0, 1), "TRANS_B": (0, 1), "GRID_LOOP": (0, 1)},
                "gemm_mma": {"TRANS_A": (0, 1), "TRANS_B": (0, 1), "VEC": (0, 1), "C_F32": (0, 1),
                             "MMA_PTX": (1,), "DYN_SMEM": (1,)},
                "softmax": {"SHFL": (1,)},
                "rope": {"POS": ("int", "long"), "INTERLEAVED": (0, 1)}, "gelu_mul": {"ACT": (1, 2)},
                "embedding": {"ID": ("int", "long")},
                "cross_entropy": {"GRAD": (0, 1), "TI": ("int", "long")},
                "fused_linear_cross_entropy": {"GRAD": (0, 1), "TI": ("int", "long")},
                "attention": {"HD": (128, 64)},
                **dict.fromkeys(("decode_attention", "paged_decode_attention", "kv_append", "paged_kv_append"),
                                {"HD": (128,)}),
                "linear_attention": {"HD": (128,)}}
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_assert", "alignof", "decltype", "asm",
            "volatile", "__launch_bounds__", "__align__", "__attribute__", "static_cast", "reinterpret_cast",
            "const_cast", "float", "double", "int", "uint", "unsigned", "char", "uchar", "short", "ushort", "long",
            "ulong", "size_t", "half", "bool", "void", "float4"}


class _Cuda:
    """A CUDA device's limits (an H200 under CUDA), for the configs such a device runs."""
    backend, kind, max_work_group_size, local_mem_size, compute_units = "cuda", "gpu", 1024, 49152, 132
    local_mem_optin, local_mem_dynamic, mma_sync, wgmma = 232448, True, True, True


def _builds(spec):
    """(dtype, defines) of each build the sweep checks: a covering set of the configs a CUDA device
    runs, each with the call's variant macros at each of their values."""
    decided = {**CALL_DEFINES.get(spec.name, {}), **spec.call_defines()}  # (a declared op's: its optional tensors)
    base = {k: vs[0] for k, vs in decided.items()}
    variants = [base] + [{**base, k: v} for k, vs in decided.items() for v in vs[1:]]
    for dtype in spec.dtypes:
        dt = lookup(dtype)
        # (a head_dim of 1000 fits no attention config's local memory: attention heads are 64-256 wide)
        for params in covering(spec, _Cuda(), {p: 128 if p == "head_dim" else 1000 for p in spec.problem}, dt):
            for v in variants:
                yield dtype, {**params, **v}


def _cuda_text(spec, dtype: str, params: dict) -> str:
    """The source NVRTC is given on CUDA (backends/cuda/compiler.py): the defines, the prelude, the kernel."""
    dt = lookup(dtype)
    ctype = dict(spec.storage).get(dtype, dt.ctype)
    defines = {"T": ctype, "ACC": dt.acc if ctype == dt.ctype else ctype, "IS_HALF": int(ctype == "half"),
               **dict(spec.defines), **params}
    if dtype == "bfloat16":
        defines["IS_BF16"] = 1
    prelude = (knobs.kernel_dir() / "cuda_prelude.h").read_text()
    return defines_as_source(_options(defines)) + prelude + f"\n{_END}\n#line 1\n" + spec.source_text()


_END = "isthmus_end_of_the_prelude"  # (a bare word the preprocessor passes through)


def _preprocess(text: str) -> str:
    r = subprocess.run([CPP, "-P", "-undef", "-nostdinc", "-x", "c++", "-"], input=text, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _undefined_calls(code: str) -> set[str]:
    """Names the kernel part of preprocessed ``code`` calls that the kernel source does not define
    and the prelude neither defines nor uses in its macros (CUDA's own that the prelude maps to)."""
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)  # string literals (inline PTX)
    prelude, kernels = code.split(_END, 1)
    called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", kernels))
    defined = set(re.findall(r"\b([A-Za-z_]\w*)\s*\([^;{}()]*(?:\([^()]*\)[^;{}()]*)*\)\s*\{", kernels))
    macros = (knobs.kernel_dir() / "cuda_prelude.h").read_text()
    in_macros = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", "\n".join(re.findall(r"^#define \S+ (.*)$", macros, re.M))))
    return called - defined - KEYWORDS - set(docs.prelude_builtins()["mapped"]) - in_macros


@pytest.mark.parametrize("name", [*registry.OPS, "gemm_mma"])
def test_every_library_kernel_calls_only_what_cuda_has_behind_the_prelude(name):
    spec = registry.get(name)
    portable = set(docs.prelude_builtins()["cuda"])  # (what the prelude maps is not "undefined")
    unmapped, builds = {}, 0
    for dtype, params in _builds(spec):
        for fn in _undefined_calls(_preprocess(_cuda_text(spec, dtype, params))) - portable:
            unmapped.setdefault(fn, (dtype, params))
        builds += 1
    assert builds >= len(spec.dtypes)
    assert not unmapped, (f"{spec.source} calls functions that neither the CUDA prelude maps nor CUDA has by that "
                          f"name (map them in opencl/cuda_prelude.h): "
                          + "; ".join(f"{fn} (e.g. {d}, {p})" for fn, (d, p) in sorted(unmapped.items())))


def test_an_unmapped_opencl_builtin_is_found():
    spec = registry.get("axpy")
    params = {t.name: t.default for t in spec.tunables}
    text = _cuda_text(spec, "float32", params).replace("#line 1\n", "#line 1\n__device__ float f(float x) "
                                                       "{ return rsqrt(x) + convert_float(1); }\n", 1)
    assert _undefined_calls(_preprocess(text)) - set(docs.prelude_builtins()["cuda"]) == {"rsqrt", "convert_float"}


def test_the_readme_lists_the_preludes_builtins():
    table = docs.prelude_table()
    assert "| `barrier(flags)` |" in table and "| `get_global_id(int)` |" in table and "`exp`" in table
    readme = (knobs.kernel_dir() / "README.md").read_text()
    assert docs.render(readme) == readme, "opencl/README.md is out of date: run python -m isthmus.ops.docs opencl/README.md"
