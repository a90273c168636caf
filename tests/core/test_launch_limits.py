"""Launches the device cannot run raise LaunchConfigError before they reach the driver (PoCL aborts
the process on grids of more than 2**32 work-groups and on __local arrays beyond its local memory;
drivers take sizes only as wide as their size_t), from eager calls, prepared launches and fused
kernels, on every device; the checks are made once per (kernel, config)."""
from __future__ import annotations

import numpy as np
import pytest

import isthmus
from isthmus.plan import Plan

TOUCH = "__kernel void touch(__global int* o) { if (get_global_id(0) == 0 && get_global_id(1) == 0) o[0] += 1; }"

# grids no device runs: beyond 64-bit indices, or more work-groups than any backend numbers
HOPELESS = [((2**64,), None), ((2**32, 2**32), None), ((2**63,), (1,)), ((2**62,), None),
            ((65536, 65536, 65536), (1, 1, 1)), ((2**44,), (1,))]


@pytest.mark.parametrize("g,l", HOPELESS, ids=[f"{g}-{l}" for g, l in HOPELESS])
def test_hopeless_grids_raise_launch_config_errors_from_every_launch_path(dev, g, l):
    k = dev.compile(TOUCH, "touch")
    o = dev.zeros(1, np.int32)
    cfg = isthmus.LaunchConfig(g, l)
    with pytest.raises(isthmus.LaunchConfigError):
        k(o, config=cfg)
    with pytest.raises(isthmus.LaunchConfigError):
        k.prepare(o, config=cfg)
    with pytest.raises(isthmus.LaunchConfigError):
        Plan(k, (o,), cfg, pin=False)  # Java's eager launches
    k(o, config=isthmus.LaunchConfig((64,), (16,)))  # the kernel still runs where it can
    assert o.to_numpy()[0] == 1


def _big_local(n: int) -> str:
    return (f"__kernel void big(__global float* o) {{ __local float t[{n}]; "
            f"for (int i = get_local_id(0); i < {n}; i += get_local_size(0)) t[i] = (float)i; "
            f"barrier(CLK_LOCAL_MEM_FENCE); o[get_global_id(0)] = t[{n} - 1 - get_local_id(0)]; }}")


def test_local_arrays_beyond_the_devices_local_memory_are_refused(dev):
    """CUDA and NVIDIA's compiler refuse such a kernel already (CompileError); PoCL builds it, and
    PoCL 5.0 reports no local memory for it (CL_KERNEL_LOCAL_MEM_SIZE = 0) and aborts the process
    at launch, so isthmus reads the arrays from PoCL's program binary and refuses the launch."""
    for n in (dev.local_mem_static // 4 + 1024, 1 << 24):  # just past the device's local memory; 64 MiB
        o = dev.zeros(16, np.float32)
        with pytest.raises((isthmus.LaunchConfigError, isthmus.CompileError)):
            dev.compile(_big_local(n), "big")(o, config=isthmus.LaunchConfig((16,), (16,)))


def _pocl(dev) -> bool:
    return dev.backend == "opencl" and dev.platform.startswith("Portable Computing Language")


def test_pocl_binaries_give_each_kernels_local_arrays(dev):
    """The reading of PoCL's program binary (backends/opencl/pocl.py) finds each kernel's __local
    arrays, as PoCL's own launch lays them out; where the driver reports the kernel's local memory
    (PoCL 3.1) the two agree."""
    if not _pocl(dev):
        pytest.skip(f"{dev.id} is not a PoCL device")
    from isthmus.backends.opencl import pocl

    src = ("__kernel void a(__global float* o) { __local float t[1000]; __local double u[3]; "
           "t[get_local_id(0)] = 1.0f; u[get_local_id(0) % 3] = 2.0; barrier(CLK_LOCAL_MEM_FENCE); "
           "o[get_global_id(0)] = t[999 - get_local_id(0)] + (float)u[2 - get_local_id(0) % 3]; }\n"
           "__kernel void b(__global float* o) { o[get_global_id(0)] = 1.0f; }")
    a, b = dev.compile(src, "a"), dev.compile(src, "b")
    binary = dev.compiler.binary(a.program.native)
    assert sorted(pocl.local_sizes(binary, "a")) == [24, 4000]
    assert pocl.local_sizes(binary, "b") == ()
    assert pocl.local_sizes(binary, "c") is None and pocl.local_sizes(b"not a pocl binary", "a") is None
    assert pocl.local_bytes((4000, 24)) == 4024 + 96 and pocl.local_bytes((24, 4000)) == 4128
    reported = a.native.get_work_group_info(dev._cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev._dev)
    assert a._resource_limits().local_mem in (reported, pocl.local_bytes(pocl.local_sizes(binary, "a")))
    assert a._resource_limits().local_mem >= 4024 and b._resource_limits().local_mem == 0


def test_local_arrays_past_local_mem_size_run_where_the_device_takes_them(dev):
    """NVIDIA's OpenCL reports 48 KiB of local memory but builds and runs __local arrays up to its
    compute capability's opt-in maximum (Device.local_mem_static): such a kernel is not refused."""
    if dev.local_mem_static <= dev.local_mem_size:
        pytest.skip(f"{dev.id} takes no __local arrays past local_mem_size")
    n = (dev.local_mem_size + 16 * 1024) // 4
    o = dev.zeros(16, np.float32)
    dev.compile(_big_local(n), "big")(o, config=isthmus.LaunchConfig((16,), (16,)))
    np.testing.assert_array_equal(o.to_numpy(), n - 1 - np.arange(16, dtype=np.float32))


def test_private_arrays_beyond_the_limit_are_refused_where_the_driver_reports_them(dev):
    if dev.private_mem_limit is None:
        pytest.skip(f"{dev.id} reports no private memory use per kernel (PoCL reports 1024 bytes for any kernel)")
    n = dev.private_mem_limit // 4 * 2
    src = (f"__kernel void priv(__global float* o, const int m) {{ float t[{n}]; "
           f"for (int i = 0; i < {n}; i++) t[i] = o[(i * 7) % m]; o[get_global_id(0) % m] = t[(m * 13) % {n}]; }}")
    o = dev.zeros(16, np.float32)
    with pytest.raises((isthmus.LaunchConfigError, isthmus.CompileError)):
        dev.compile(src, "priv")(o, 16, config=isthmus.LaunchConfig((16,), (16,)))


def test_kernel_limits_are_read_from_the_compiled_kernel(dev):
    limits = dev.compile(TOUCH, "touch")._resource_limits()
    assert 1 <= limits.max_work_group_size <= dev.max_work_group_size
    assert limits.local_mem <= dev.local_mem_size
    tiled = dev.compile("__kernel void tiled(__global float* o) { __local float t[256]; t[get_local_id(0) % 256] = 1; "
                        "barrier(CLK_LOCAL_MEM_FENCE); o[get_global_id(0)] = t[0]; }", "tiled")
    assert tiled._resource_limits().local_mem >= 1024


def test_checks_run_once_per_kernel_and_config(dev, monkeypatch):
    import isthmus.kernel as kernel_module

    k = dev.compile(TOUCH, "touch")
    o = dev.zeros(1, np.int32)
    seen = []
    real = kernel_module.check_kernel
    monkeypatch.setattr(kernel_module, "check_kernel", lambda *a: seen.append(a[1]) or real(*a))
    cfg = isthmus.LaunchConfig((32,), (16,))
    for _ in range(5):
        k(o, config=cfg)
        k.prepare(o, config=cfg).launch()
    assert seen == [(16,)]
    k(o, config=isthmus.LaunchConfig((32,), (8,)))
    assert seen == [(16,), (8,)]
    assert o.to_numpy()[0] == 11


def test_fused_kernels_keep_to_their_kernels_work_group_limit(dev, rng):
    f = isthmus.fuse("out = x * 2 + y")
    xh, yh = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    out = f(dev.asarray(xh), dev.asarray(yh))
    np.testing.assert_allclose(out.to_numpy(), xh * 2 + yh, rtol=1e-6)
    variant = next(iter(f._variants.values()))
    assert variant.lsize[0] <= variant.kernel._resource_limits().max_work_group_size
