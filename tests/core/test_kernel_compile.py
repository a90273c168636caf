import os
import subprocess
import sys

import numpy as np
import pytest

import isthmus
from isthmus import LaunchConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE = """
__kernel void scale(const int n, const float a, __global const float* x, __global float* y) {
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + OFFSET;
}
"""
TILED = """
__kernel void rowsum(const int rows, const int cols, __global const float* x, __global float* out) {
    __local float part[WG];
    int r = get_group_id(0), l = get_local_id(0);
    float s = 0.0f;
    for (int c = l; c < cols; c += WG) s += x[r * cols + c];
    part[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = WG / 2; w > 0; w >>= 1) {
        if (l < w) part[l] += part[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[r] = part[0];
}
"""


@pytest.mark.parametrize("n", [1, 31, 1000, 4099])
def test_user_kernel_with_defines_and_scalar_conversion(dev, rng, n):
    k = dev.compile(SCALE, "scale", defines={"OFFSET": 1.5})
    x = rng.standard_normal(n).astype(np.float32)
    bx, by = dev.asarray(x), dev.asarray(np.full(n, np.nan, np.float32))
    k(n, 3, bx, by, config=LaunchConfig((-(-n // 64) * 64,), (64,)))  # plain Python ints for int and float
    np.testing.assert_allclose(by.to_numpy(), 3 * x + 1.5, rtol=1e-6, atol=1e-6)  # GPUs fuse the multiply-add
    k(n, 2.0, bx, by, config=LaunchConfig((n,)))  # the runtime picks the local size
    np.testing.assert_allclose(by.to_numpy(), 2 * x + 1.5, rtol=1e-6, atol=1e-6)


def test_local_memory_and_barriers(dev, rng):
    rows, cols = 13, 1001
    k = dev.compile(TILED, "rowsum", {"WG": 64})
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = dev.asarray(np.full(rows, np.nan, np.float32))
    k(rows, cols, dev.asarray(x), out, config=LaunchConfig((rows * 64,), (64,)))
    np.testing.assert_allclose(out.to_numpy(), x.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_compile_error_carries_log_and_name(dev):
    with pytest.raises(isthmus.CompileError) as info:
        dev.compile("__kernel void broken(__global float* x) { x[0] = undefined_thing; }", "broken")
    assert info.value.kernel_name == "broken"
    assert "undefined_thing" in info.value.log
    assert "undefined_thing" in str(info.value)
    with pytest.raises(isthmus.CompileError, match="no kernel named 'other'"):
        dev.compile(SCALE.replace("OFFSET", "0"), "other")
    with pytest.raises(isthmus.InvalidArgumentError):
        dev.compile("", "x")


def test_programs_are_cached_in_memory(dev):
    before = dict(isthmus.program.stats)
    a = dev.compile(SCALE, "scale", {"OFFSET": 7})
    b = dev.compile(SCALE, "scale", {"OFFSET": 7})
    assert a is b
    assert isthmus.program.stats["memory_hits"] == before["memory_hits"] + 1


CACHE_SCRIPT = """
import isthmus, json
dev = isthmus.device({dev!r})
dev.compile('__kernel void f(__global float* x) {{ x[get_global_id(0)] += 1.0f; }}', 'f', {{'TAG': {tag}}})
print(json.dumps(isthmus.program.stats))
"""


def test_second_process_does_not_recompile(dev, tmp_path):
    env = {**os.environ, "ISTHMUS_CACHE_DIR": str(tmp_path)}
    tag = int.from_bytes(os.urandom(3), "little")
    runs = [subprocess.run([sys.executable, "-c", CACHE_SCRIPT.format(dev=dev.id, tag=tag)], capture_output=True,
                           text=True, env=env, timeout=300, cwd=ROOT) for _ in range(2)]
    import json

    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["compiles"] == 1 and first["disk_hits"] == 0
    assert second["compiles"] == 0 and second["disk_hits"] == 1
    assert list(tmp_path.glob("programs-v*/*/*.bin"))


def test_corrupt_cache_entry_is_rebuilt(dev, tmp_path, monkeypatch):
    monkeypatch.setenv("ISTHMUS_CACHE_DIR", str(tmp_path))
    src = "__kernel void g(__global int* x) { x[get_global_id(0)] = CORRUPT; }"
    dev.compile(src, "g", {"CORRUPT": 41})
    for f in tmp_path.glob("programs-v*/*/*.bin"):
        f.write_bytes(b"garbage")
    dev._kernels.clear()
    k = dev.compile(src, "g", {"CORRUPT": 41})
    out = dev.zeros(4, np.int32)
    k(out, config=LaunchConfig((4,)))
    assert out.to_numpy().tolist() == [41] * 4


def test_launch_rejects_bad_input_before_enqueue(dev, rng):
    k = dev.compile(SCALE, "scale", {"OFFSET": 0})
    x, y = dev.asarray(rng.standard_normal(64).astype(np.float32)), dev.zeros(64, np.float32)
    ok = LaunchConfig((64,), (64,))
    cases = [
        (lambda: k(64, 1.0, x, y), isthmus.LaunchConfigError, "needs a launch config"),
        (lambda: k(64, 1.0, x, config=ok), isthmus.InvalidArgumentError, "takes 4 arguments"),
        (lambda: k(64, 1.0, x, y, y, config=ok), isthmus.InvalidArgumentError, "takes 4 arguments"),
        (lambda: k(64, 1.0, x, dev.zeros(64, np.float64), config=ok) if dev.supports("float64") else
         k(64, 1.0, x, dev.zeros(64, np.int32), config=ok), isthmus.InvalidArgumentError, "expected a buffer of float32"),
        (lambda: k(64, 1.0, x, np.zeros(64, np.float32), config=ok), isthmus.InvalidArgumentError, "expected a Buffer"),
        (lambda: k(x, 1.0, x, y, config=ok), isthmus.InvalidArgumentError, "scalar"),
        (lambda: k(2**40, 1.0, x, y, config=ok), isthmus.InvalidArgumentError, "does not fit"),
        (lambda: k(64, 1.0, x, y, config=LaunchConfig((64,), (dev.max_work_group_size * 2,))),
         isthmus.LaunchConfigError, "at most"),
        (lambda: k(64, 1.0, x, y, config=LaunchConfig((100,), (64,))), isthmus.LaunchConfigError, "does not divide"),
        (lambda: k(64, 1.0, x, y, config=(64,)), isthmus.LaunchConfigError, "LaunchConfig"),
    ]
    for call, exc, match in cases:
        y.copy_from(np.full(64, 5.0, np.float32))
        with pytest.raises(exc, match=match):
            call()
        np.testing.assert_array_equal(y.to_numpy(), np.full(64, 5.0, np.float32))  # nothing was enqueued
    closed = dev.zeros(64, np.float32)
    closed.close()
    with pytest.raises(isthmus.ClosedBufferError):
        k(64, 1.0, x, closed, config=ok)
    with pytest.raises(isthmus.LaunchConfigError):
        isthmus.LaunchConfig((0,))


def test_timer_measures_device_time(dev, rng):
    k = dev.compile(SCALE, "scale", {"OFFSET": 0})
    n = 1 << 16
    x, y = dev.asarray(rng.standard_normal(n).astype(np.float32)), dev.zeros(n, np.float32)
    with dev.timer() as t:
        k(n, 1.0, x, y, config=LaunchConfig((n,), (64,)))
    assert t.ms >= 0 and np.isfinite(t.ms)
