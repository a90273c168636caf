"""What compiling prints or warns: the library's own kernels are compiled with warnings off and
print nothing (from Python or from the driver's C code); a user's kernel keeps its compiler
messages on ``Program.build_log`` and raises them as one isthmus CompileWarning."""
import json
import os
import subprocess
import sys
import uuid
import warnings

import numpy as np
import pytest

import isthmus
from isthmus.program import CompileWarning, Program, compiler_messages

# `#warning` makes every C preprocessor (PoCL's clang, NVIDIA's OpenCL, NVRTC) emit a warning
_NOISY = """#warning "isthmus-test-message"
__kernel void noisy(__global float* y) {{ y[get_global_id(0)] = {value}f; }}
"""


def _noisy() -> str:
    return f"// {uuid.uuid4()}\n" + _NOISY.format(value=1.5)  # a source no cache has seen


def test_a_user_kernel_with_compiler_messages_keeps_its_log_and_warns_once(dev, monkeypatch):
    monkeypatch.setenv("ISTHMUS_DISK_CACHE", "0")
    source = _noisy()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        k = dev.compile(source, "noisy")
    seen = [w for w in seen if issubclass(w.category, CompileWarning)]
    if "isthmus-test-message" in k.program.build_log:
        assert len(seen) == 1 and "isthmus-test-message" in str(seen[0].message)
        assert "noisy" in str(seen[0].message) and dev.id in str(seen[0].message)
    else:  # NVIDIA's OpenCL logs nothing of a #warning: nothing of the source to say, no warning
        assert seen == [] and compiler_messages(k.program.build_log) == "", k.program.build_log
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dev.compile(source, "noisy") is k  # from memory: no second warning
    y = dev.zeros(4, "float32")
    k(y, config=isthmus.LaunchConfig((4,)))
    assert y.to_numpy().tolist() == [1.5] * 4


def test_a_library_build_warns_nothing_and_prints_nothing(dev, monkeypatch, capfd):
    """What the op layer builds (Program.build without user=True): even a source the compiler has
    something to say about gives no Python warning (PyOpenCL's CompilerWarning included) and
    nothing on the process's stdout or stderr."""
    monkeypatch.setenv("ISTHMUS_DISK_CACHE", "0")
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program = Program.build(dev, _noisy(), {}, "noisy")
    kernel = program.kernel("noisy")
    y = dev.zeros(4, "float32")
    kernel(y, config=isthmus.LaunchConfig((4,)))
    assert y.to_numpy().tolist() == [1.5] * 4
    assert "isthmus-test-message" not in program.build_log
    assert capfd.readouterr() == ("", "")


_EVERY_OP = """
import json, sys, warnings
warnings.simplefilter("error")  # any warning fails the run
import numpy as np
import isthmus
from isthmus.ops import workloads
dev = isthmus.device(sys.argv[1])
done = []
for dt in ("float32", "float16", "bfloat16", "float64", "int32"):
    if not dev.supports(dt):
        continue
    np_dt = isthmus.dtypes.lookup(dt).np
    for w in workloads.standard("tiny", dtype=np_dt):
        try:
            w.call(*w.make(dev))
        except isthmus.UnsupportedDtypeError:
            continue
        done.append(f"{w.op}:{dt}")
dev.synchronize()
print(json.dumps(done))
"""


def test_every_library_op_builds_without_a_word(dev, tmp_path):
    """Every library op at every dtype, built from source in a fresh process (no isthmus disk
    cache, an empty PoCL kernel cache): warnings are errors, and the process writes nothing but
    its result to stdout and nothing to stderr (the driver's C code included)."""
    env = {**os.environ, "ISTHMUS_DISK_CACHE": "0", "POCL_CACHE_DIR": str(tmp_path / "pocl"),
           "PYOPENCL_COMPILER_OUTPUT": "1"}
    run = subprocess.run([sys.executable, "-c", _EVERY_OP, dev.id], capture_output=True, text=True, env=env,
                         timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    assert len(lines) == 1
    done = json.loads(lines[0])
    assert "softmax:float32" in done and "gemm:float32" in done and "sum:int32" in done


def test_a_compilers_note_on_every_kernel_is_no_message_of_the_source():
    """NVIDIA's OpenCL (CUDA 13) logs, for every __kernel, that it overrides a noinline attribute: without
    more, a user's kernel warns nothing (the full log stays on Program.build_log); anything else still warns."""
    note = ("(): Warning: Function twice is a kernel, so overriding noinline attribute. "
            "The function may be inlined when called.")
    assert compiler_messages(note + "\n") == ""
    assert compiler_messages(f"{note}\n{note.replace('twice', 'other')}") == ""
    real = '<kernel>:1:2: warning: "isthmus-test-message" [-W#warnings]'
    assert compiler_messages(f"{note}\n{real}") == real
    assert compiler_messages("  \n") == ""


def test_a_fused_expression_builds_without_a_word(dev, monkeypatch, capfd):
    """isthmus.fuse generates its kernel: the library's own, built as every op's (warnings off)."""
    monkeypatch.setenv("ISTHMUS_DISK_CACHE", "0")
    capfd.readouterr()
    c = uuid.uuid4().int % 1000  # a source no cache has seen
    x = dev.asarray(np.arange(5, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = dev.fuse(f"out = x * 3 + {c}")
        y = f(x)
    (variant,) = [v for k, v in f._variants.items() if k[0] == dev.id]
    assert variant.kernel.program.options[-1] == "-w"
    np.testing.assert_array_equal(y.to_numpy(), np.arange(5, dtype=np.float32) * 3 + c)
    assert capfd.readouterr() == ("", "")
