"""Several devices in one process: PoCL exposes two CPU devices with POCL_DEVICES."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = r"""
import numpy as np, isthmus
rng = np.random.default_rng()
devs = [d for d in isthmus.devices() if d.backend == "opencl"]
by_platform = {}
for d in devs:
    by_platform.setdefault(d.platform, []).append(d)
group = max(by_platform.values(), key=len, default=[])
if len(group) < 2:  # (a machine whose OpenCL is one GPU, PoCL absent: the GPU machine)
    raise SystemExit(print("SKIP: no OpenCL platform with two devices (POCL_DEVICES needs PoCL)"))
d1, d2 = group[:2]
assert d1 is not d2 and d1.id != d2.id
x = rng.standard_normal(100003).astype(np.float32)
a, b = d1.asarray(x), d2.asarray(2 * x)
s1, s2 = isthmus.ops.sum(a), isthmus.ops.sum(b)        # queued on both devices at once
ya, yb = d1.zeros(x.size, np.float32), d2.zeros(x.size, np.float32)
isthmus.ops.axpy(1.0, a, ya); isthmus.ops.axpy(1.0, b, yb)
# float32 sums of random normals can cancel to near zero: the error bound is relative to the sum
# of the magnitudes (as in tests/ops/test_ops_reduce.py), not to the result
mag = np.abs(x.astype(np.float64)).sum()
assert abs(s1.to_numpy()[0] - x.sum(dtype=np.float64)) <= 1e-6 * mag, (s1.to_numpy(), x.sum(dtype=np.float64))
assert abs(s2.to_numpy()[0] - 2 * x.sum(dtype=np.float64)) <= 2e-6 * mag, (s2.to_numpy(), 2 * x.sum(dtype=np.float64))
assert np.array_equal(ya.to_numpy(), x) and np.array_equal(yb.to_numpy(), 2 * x)
# an argument from the wrong device is an error, and nothing runs
try:
    isthmus.ops.axpy(1.0, a, yb)
    raise SystemExit("mixing devices did not raise")
except isthmus.InvalidArgumentError as e:
    assert d1.id in str(e) or d2.id in str(e), e
k = d1.compile("__kernel void inc(__global float* v) { v[get_global_id(0)] += 1.0f; }", "inc")
try:
    k(b, config=isthmus.LaunchConfig((x.size,)))
    raise SystemExit("kernel accepted a buffer of another device")
except isthmus.InvalidArgumentError as e:
    assert "copy it" in str(e)
moved = b.to(d1)                                       # a copy across devices
assert moved.device is d1 and np.array_equal(moved.to_numpy(), 2 * x)
assert np.array_equal(b.to(d2.id).to_numpy(), 2 * x)
try:
    d1.library("sum")(b)
    raise SystemExit("library kernel accepted a buffer of another device")
except isthmus.InvalidArgumentError:
    pass
print("OK", d1.id, d2.id)
"""


def _skip_without_two_devices(proc):
    if proc.returncode == 0 and proc.stdout.startswith("SKIP"):
        pytest.skip(proc.stdout.strip())


def test_two_pocl_devices_in_one_process():
    env = {**os.environ, "POCL_DEVICES": "pthread pthread"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600,
                          cwd=ROOT)
    _skip_without_two_devices(proc)
    assert proc.returncode == 0 and proc.stdout.startswith("OK"), proc.stdout + proc.stderr


REPEATED = r"""
import numpy as np, isthmus
devs = [d for d in isthmus.devices() if d.backend == "opencl"]
by_platform = {}
for d in devs:
    by_platform.setdefault(d.platform, []).append(d)
group = max(by_platform.values(), key=len, default=[])
if len(group) < 2:  # (a machine whose OpenCL is one GPU, PoCL absent: the GPU machine)
    raise SystemExit(print("SKIP: no OpenCL platform with two devices (POCL_DEVICES needs PoCL)"))
d1, d2 = group[:2]
rng = np.random.default_rng()
x = rng.standard_normal(4099).astype(np.float32)
m = rng.standard_normal((6, 9)).astype(np.float32)
on = {d: (d.asarray(x), d.asarray(x), d.asarray(m), d.empty(1, np.float32), d.empty((6, 9), np.float32),
          d.empty((9, 6), np.float32), d.asarray(m.T.copy())) for d in (d1, d2)}
for d, (a, b, mm, s, sm, t, mt) in on.items():     # twice: the second call on each device uses its recipes
    for _ in range(2):
        isthmus.ops.axpy(1.0, a, b); isthmus.ops.sum(a, out=s); isthmus.ops.max(a, out=s)
        isthmus.ops.softmax(mm, out=sm); isthmus.ops.transpose(mm, out=t); isthmus.ops.gemm(mm, mt)
a1, b1, m1, s1, sm1, t1, mt1 = on[d1]
a2, b2, m2, s2, sm2, t2, mt2 = on[d2]
mixed = [lambda: isthmus.ops.axpy(1.0, a1, b2), lambda: isthmus.ops.sum(a1, out=s2),
         lambda: isthmus.ops.max(a2, out=s1), lambda: isthmus.ops.softmax(m1, out=sm2),
         lambda: isthmus.ops.transpose(m2, out=t1), lambda: isthmus.ops.gemm(m1, mt2),
         lambda: isthmus.ops.gemm(m1, mt1, dev_c := d2.zeros((6, 6), np.float32)),
         lambda: d1.library("sum")(a2)]
for i, call in enumerate(mixed):
    try:
        call()
        raise SystemExit(f"mixed call {i} did not raise")
    except isthmus.InvalidArgumentError as e:
        assert d1.id in str(e) or d2.id in str(e), e
assert abs(isthmus.ops.sum(a2, out=s2).to_numpy()[0] - x.sum(dtype=np.float64)) <= 1e-6 * np.abs(x.astype(np.float64)).sum()
np.testing.assert_allclose(b1.to_numpy(), 3 * x, rtol=1e-6)
print("OK")
"""


def test_repeated_ops_on_two_devices_keep_refusing_mixed_buffers():
    env = {**os.environ, "POCL_DEVICES": "pthread pthread"}
    proc = subprocess.run([sys.executable, "-c", REPEATED], capture_output=True, text=True, env=env, timeout=600,
                          cwd=ROOT)
    _skip_without_two_devices(proc)
    assert proc.returncode == 0 and proc.stdout.startswith("OK"), proc.stdout + proc.stderr
