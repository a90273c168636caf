"""gemm_mma (tensor-core gemm for float16/bfloat16, f32 accumulation) on every device against a float64
NumPy reference: odd sizes, operand transposes, batching, output dtypes, poisoned outputs, typed errors.
(On PoCL this runs the portable path of opencl/gemm_mma.cl; the PTX path runs on the GPU machine.)"""
import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.ops.specs import gemm_mma
from isthmus.ops.resolve import forced

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": BF16}


def _err(out, ref) -> float:
    out, ref = out.astype(np.float64), ref.astype(np.float64)
    assert not np.isnan(out).any(), "unwritten (poisoned) or NaN elements"
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def _tol(out_dtype) -> float:
    # inputs are exact in f32, so an f32 result differs from float64 only by f32 summation; a 16-bit
    # result adds one rounding (half an ulp: 2^-11 float16, 2^-8 bfloat16 relative)
    return {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-3, BF16: 6e-3}[np.dtype(out_dtype)]


def _operands(rng, dt, m, n, k, ta, tb, batch_a=None, batch_b=None):
    a = rng.standard_normal(((batch_a,) if batch_a else ()) + ((k, m) if ta else (m, k))).astype(dt)
    b = rng.standard_normal(((batch_b,) if batch_b else ()) + ((n, k) if tb else (k, n))).astype(dt)
    return a, b


def _check(dev, rng, dt, m, n, k, ta=False, tb=False, out=None, beta=0.0, batch_a=None, batch_b=None, alpha=1.5):
    a, b = _operands(rng, dt, m, n, k, ta, tb, batch_a, batch_b)
    out_dt = np.dtype(out) if out is not None else dt
    batch = batch_a or batch_b
    shape = ((batch,) if batch else ()) + (m, n)
    c0 = rng.standard_normal(shape).astype(out_dt) if beta else np.full(shape, np.nan, out_dt)  # beta 0: never read
    c = dev.asarray(c0)
    res = gemm_mma.run(dev.asarray(a), dev.asarray(b), c, alpha, beta, ta, tb, out)
    assert res is c and res.shape == shape and res.dtype == out_dt
    ref = gemm_mma.reference(a, b, c0 if beta else None, alpha, beta, ta, tb, out_dt)
    assert _err(res.to_numpy(), ref) <= _tol(out_dt)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("m, n, k, ta, tb, out, beta", [
    (64, 64, 64, False, False, "float32", 0.0),     # whole tiles, 16-byte copies
    (33, 17, 45, False, True, None, 0.5),           # odd everything, x @ W.T, 16-bit result read back
    (37, 29, 19, True, False, "float32", -1.0),     # K odd, A transposed
    (40, 72, 24, True, True, None, 0.0),            # both transposed, aligned
    (1, 3, 1, False, False, "float32", 0.0),        # smallest
])
def test_gemm_mma_matches_numpy(dev, rng, dtype, m, n, k, ta, tb, out, beta):
    _check(dev, rng, DTYPES[dtype], m, n, k, ta, tb, out, beta)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_gemm_mma_batched_with_shared_weights(dev, rng, dtype):
    _check(dev, rng, DTYPES[dtype], 21, 40, 32, tb=True, batch_a=3)        # x[b] @ W.T
    _check(dev, rng, DTYPES[dtype], 16, 24, 9, ta=True, out="float32", batch_a=2, batch_b=2, beta=2.0)
    _check(dev, rng, DTYPES[dtype], 8, 5, 16, batch_b=4)                    # A shared


def test_gemm_mma_k_zero_scales_c(dev, rng):
    a, b = dev.empty((5, 0), BF16), dev.empty((0, 7), BF16)
    c0 = rng.standard_normal((5, 7)).astype(np.float32)
    out = gemm_mma.run(a, b, dev.asarray(c0), 1.0, 0.5, out_dtype="float32").to_numpy()
    np.testing.assert_allclose(out, 0.5 * c0, rtol=1e-6)
    assert (gemm_mma.run(a, b).to_numpy().astype(np.float32) == 0).all()


def test_gemm_mma_empty_output(dev):
    assert gemm_mma.run(dev.empty((0, 4), np.float16), dev.empty((4, 3), np.float16)).shape == (0, 3)


@pytest.mark.parametrize("params", [
    dict(BM=64, BN=32, BK=32, WM=2, WN=1, STAGES=3, GM=4, LDSM=1, ASYNC=1),
    dict(BM=32, BN=64, BK=16, WM=1, WN=4, STAGES=2, GM=1, LDSM=0, ASYNC=0),
])
def test_gemm_mma_other_tilings(dev, rng, params):
    """Tiles larger than the problem and smaller, deeper pipelines, more warps: every config is exact."""
    with forced(gemm_mma.SPEC, params):
        _check(dev, rng, BF16, 70, 45, 83, tb=True, out="float32")


def test_gemm_mma_swizzled_tiles(dev, rng):
    """SWZ=1 (16-byte chunks permuted instead of padded rows) with a 3-stage ring: both layouts of
    each operand, odd sizes (element-wise copies) and aligned ones (16-byte copies)."""
    params = dict(BM=64, BN=32, BK=32, WM=2, WN=1, STAGES=3, GM=4, LDSM=1, ASYNC=1, SWZ=1)
    with forced(gemm_mma.SPEC, params):
        _check(dev, rng, np.dtype(np.float16), 70, 45, 83, ta=True, out="float32", beta=0.5)
        _check(dev, rng, BF16, 64, 48, 96, tb=True)


@pytest.mark.parametrize("params", [
    dict(BM=128, BN=256, BK=64, WM=8, WN=1, STAGES=4, GM=8, WGMMA=1),
    dict(BM=128, BN=128, BK=64, WM=8, WN=1, STAGES=5, GM=8, WGMMA=1),
    dict(BM=64, BN=64, BK=64, WM=4, WN=1, STAGES=3, GM=1, WGMMA=1),
])
@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_gemm_mma_warpgroup_mma(dev, rng, params, ta, tb):
    """Hopper's wgmma path (CUDA on sm_90): every operand layout through 16-byte copies (sizes that
    are multiples of 8, several K-steps, partial tiles) and element-wise ones (odd sizes), batched,
    both dtypes, 16-bit and f32 results."""
    if not dev.wgmma:
        pytest.skip("no warpgroup MMA on this device (Hopper under CUDA only)")
    with forced(gemm_mma.SPEC, params):
        _check(dev, rng, np.dtype(np.float16), 200, 264, 328, ta, tb, out="float32", beta=0.5)
        _check(dev, rng, BF16, 136, 72, 520, ta, tb)
        _check(dev, rng, BF16, 70, 45, 83, ta, tb, out="float32")
        _check(dev, rng, np.dtype(np.float16), 64, 128, 64, ta, tb, batch_a=3, batch_b=3)
        _check(dev, rng, BF16, 72, 136, 200, ta, tb, batch_a=3, beta=-0.5)            # B shared, 16-bit C read
        _check(dev, rng, np.dtype(np.float16), 40, 64, 96, ta, tb, batch_b=2, out="float32", beta=2.0)  # A shared


@pytest.mark.parametrize("splits", [2, 4, 16])
def test_gemm_mma_split_k(dev, rng, splits):
    """SPLITK: each split's f32 partial into scratch, then one combine with alpha, beta and the
    output dtype; K not a multiple of the splits or of BK (the last splits get nothing), every
    operand layout, batches, and a graph-free second call reusing the same scratch."""
    params = dict(BM=32, BN=32, BK=16, WM=1, WN=2, STAGES=3, GM=1, LDSM=1, ASYNC=1, SPLITK=splits)
    with forced(gemm_mma.SPEC, params):
        for ta, tb in [(False, True), (True, False), (False, False), (True, True)]:
            _check(dev, rng, BF16, 19, 40, 83, ta, tb, out="float32", beta=0.5)
        _check(dev, rng, np.dtype(np.float16), 16, 72, 256, tb=True, batch_a=3)    # x[b] @ W.T, 16-bit result
        _check(dev, rng, np.dtype(np.float16), 24, 40, 64, batch_a=2, batch_b=2, out="float32")


_ROWS = [dict(ROWS=1, RM=16, RN=2, RK=8, RU=2), dict(ROWS=1, RM=32, RN=1, RK=2, RU=1, SPLITK=4),
         dict(ROWS=1, RM=64, RN=4, RK=1, RU=4, SPLITK=2), dict(ROWS=1, RM=16, RN=4, RK=4, RU=4, SPLITK=8),
         dict(ROWS=1, RM=16, RN=2, RK=4, RU=2, RP=1)]


@pytest.mark.parametrize("params", _ROWS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items() if k != "ROWS"))
def test_gemm_mma_rows_kernel(dev, rng, params):
    """ROWS=1, the skinny x @ W.T kernel: one row and a few, rows past RM (several passes), odd K
    (element-wise loads) and K a multiple of 8 (16-byte loads), K shorter than the warps' slices
    and splits (some get nothing), batches with shared weights, both dtypes, 16-bit and f32 results,
    beta, and split-K's combine; the launch is the rows build."""
    from isthmus.record import recording

    with forced(gemm_mma.SPEC, params):
        _check(dev, rng, BF16, 1, 45, 83, tb=True, out="float32", beta=0.5)
        _check(dev, rng, np.dtype(np.float16), 19, 40, 264, tb=True)
        _check(dev, rng, BF16, 70, 33, 96, tb=True, batch_a=3)
        _check(dev, rng, np.dtype(np.float16), 3, 24, 8, tb=True, batch_a=2, batch_b=2, out="float32", beta=-1.0)
        _check(dev, rng, BF16, 5, 17, 1, tb=True, out="float32")
        _check(dev, rng, BF16, 16, 264, 520, tb=True, alpha=1.0)
        a, b = dev.asarray(np.ones((4, 16), BF16)), dev.asarray(np.ones((8, 16), BF16))
        with recording(dev) as rec:
            gemm_mma.run(a, b, trans_b=True)
        assert rec.launches[0][0].program.defines["ROWS"] == 1


def test_gemm_mma_rule_takes_the_rows_kernel_for_a_few_rows_of_x_at_w_t():
    """On a device with mma.sync, x @ W.T with up to 16 rows takes the rows kernel (valid, K split
    where the columns leave the GPU idle); more rows, other layouts and portable devices don't."""
    dev = _NvidiaLike("cuda", 227 * 1024, True)
    tb = gemm_mma.SPEC.variant(trans_b=True)
    for m, n, k in [(1, 4096, 4096), (16, 11008, 4096), (8, 4096, 11008), (1, 128256, 4096), (3, 200, 1 << 16)]:
        problem = {"m": m, "n": n, "k": k}
        p = tb.defaults(dev, problem)
        assert p["ROWS"] == 1 and tb.is_valid(p, dev, problem), (problem, p)
    assert tb.defaults(dev, {"m": 3, "n": 200, "k": 1 << 16})["SPLITK"] == 8
    assert tb.defaults(dev, {"m": 1, "n": 4096, "k": 4096})["SPLITK"] == 1
    assert tb.defaults(dev, {"m": 64, "n": 4096, "k": 4096})["ROWS"] == 0
    for fam in (gemm_mma.SPEC, gemm_mma.SPEC.variant(trans_a=True, trans_b=True)):
        assert fam.defaults(dev, {"m": 1, "n": 4096, "k": 4096})["ROWS"] == 0
        assert not fam.is_valid(dict(fam.defaults(dev, {"m": 1, "n": 64, "k": 64}), **_ROWS[0]), dev,
                                {"m": 1, "n": 64, "k": 64})  # the rows kernel is x @ W.T only
    portable = _NvidiaLike("opencl", None, False)
    portable.mma_sync = False
    assert tb.defaults(portable, {"m": 1, "n": 4096, "k": 4096})["ROWS"] == 0


def test_gemm_mma_split_k_in_a_captured_graph(dev, rng):
    """A captured split-K gemm keeps its partials' memory with the graph: nothing runs while
    capturing, each replay recomputes C from the current inputs."""
    params = dict(BM=32, BN=32, BK=16, WM=1, WN=2, STAGES=3, GM=1, LDSM=1, ASYNC=1, SPLITK=4)
    a, b = _operands(rng, BF16, 16, 48, 200, False, True)
    da, db = dev.asarray(a), dev.asarray(b)
    c = dev.asarray(np.full((16, 48), np.nan, np.float32))
    with forced(gemm_mma.SPEC, params), dev.capture() as graph:
        gemm_mma.run(da, db, c, 2.0, 0.0, trans_b=True, out_dtype="float32")
    assert np.isnan(c.to_numpy()).all()
    try:
        for _ in range(2):
            graph.launch()
            want = gemm_mma.reference(a, b, alpha=2.0, trans_b=True, out_dtype=np.float32)
            assert _err(c.to_numpy(), want) <= _tol(np.float32)
            a = rng.standard_normal(a.shape).astype(BF16)
            da.copy_from(a)
    finally:
        graph.close()


def test_gemm_mma_rule_splits_k_for_few_long_tiles():
    """x @ W.T with a batch of rows and a long K gets K splits up to two work-groups a compute unit;
    short K, many tiles and squares keep one."""
    dev = _NvidiaLike("cuda", 227 * 1024, True)
    pick = lambda m, n, k: gemm_mma.SPEC.defaults(dev, {"m": m, "n": n, "k": k}).get("SPLITK", 1)  # noqa: E731
    assert pick(16, 4096, 11008) == 4 and pick(64, 4096, 11008) == 4
    assert pick(16, 4096, 4096) == 1 and pick(16, 11008, 4096) == 1 and pick(4096, 4096, 16384) == 1
    assert pick(16, 128, 1 << 20) == 8  # at most SPLITK's largest value
    for m, n, k in [(16, 4096, 11008), (64, 4096, 8193), (16, 4096, 5000), (16, 128, 1 << 20)]:  # valid picks
        problem = {"m": m, "n": n, "k": k}
        assert gemm_mma.SPEC.is_valid(gemm_mma.SPEC.defaults(dev, problem), dev, problem), problem


def test_gemm_mma_tuning_space_keeps_its_size():
    """The wgmma and split-K tunables add configs only where they apply (a Hopper device; skinny
    problems with a long K): elsewhere the tuner's space is what it was without them."""
    dev = _NvidiaLike("opencl", None, False)
    space = list(gemm_mma.SPEC.space(dev, {"m": 4096, "n": 4096, "k": 4096}))
    assert all(p["WGMMA"] == 0 and p["SPLITK"] == 1 and p["STAGES"] <= 4 and p["WM"] <= 4 for p in space)
    assert len(space) < 60000
    skinny = {p["SPLITK"] for p in gemm_mma.SPEC.space(dev, {"m": 16, "n": 4096, "k": 11008})}
    assert skinny == {1, 2, 4}


def test_gemm_mma_ring_bytes_match_the_kernel():
    """smem_bytes (the dynamic shared memory CUDA launches pass) is the ring the source declares."""
    p = dict(BM=128, BN=256, BK=32, STAGES=3, SWZ=1)
    assert gemm_mma.smem_bytes(p, False, False) == 3 * 2 * (128 * 32 + 32 * 256)
    assert gemm_mma.smem_bytes(dict(p, SWZ=0), False, True) == 3 * 2 * (128 * 40 + 256 * 40)
    assert gemm_mma.smem_bytes(dict(p, SWZ=0), True, False) == 3 * 2 * (32 * 136 + 32 * 264)
    # wgmma: unpadded 128-byte swizzle rows, and 1 KiB to align the ring
    assert gemm_mma.smem_bytes(dict(p, BK=64, SWZ=0, WGMMA=1), True, False) == 3 * 2 * (128 + 256) * 64 + 1024


def test_cuda_launch_passes_dynamic_shared_memory_and_raises_the_limit_once():
    """Without a GPU: a kernel's dynamic_local_bytes reaches cuLaunchKernel's sharedMemBytes; above
    the default 48 KiB the kernel's limit is raised once first; over the opt-in maximum is a typed
    error before any driver call."""
    import contextlib
    from types import SimpleNamespace

    from isthmus.backends import cuda

    launches, raised = [], []
    cp = SimpleNamespace(cuda=SimpleNamespace(driver=SimpleNamespace(
        launchKernel=lambda *a: launches.append(a[7]), funcSetAttribute=lambda *a: raised.append(a),
        CUDADriverError=RuntimeError), runtime=SimpleNamespace(getDevice=lambda: 0)))
    from isthmus.device import KernelState

    dev = SimpleNamespace(_cp=cp, _cp_device=contextlib.nullcontext(), index=0, id="cuda:0",
                          stream=SimpleNamespace(ptr=7), _launch_graphs=False, local_mem_size=48 * 1024,
                          local_mem_optin=227 * 1024)
    launcher = cuda.CudaLauncher(dev)
    launcher.grid = lambda k, g, l: ((g[0] // l[0],), l)
    kernels = {n: SimpleNamespace(native=SimpleNamespace(ptr=5), name="k", dynamic_local_bytes=n, _backend=KernelState())
               for n in (0, 40 * 1024, 72 * 1024)}
    for nbytes in (0, 40 * 1024, 72 * 1024, 72 * 1024):  # the 72 KiB kernel twice: one raise
        cuda._PreparedLaunch(launcher, kernels[nbytes], (128,), (128,), [np.int64(1)]).launch()
    assert launches == [0, 40 * 1024, 72 * 1024, 72 * 1024]
    assert raised == [(5, 8, 72 * 1024)]  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, once
    big = SimpleNamespace(native=SimpleNamespace(ptr=6), name="big", dynamic_local_bytes=228 * 1024,
                          _backend=KernelState())
    with pytest.raises(isthmus.LaunchConfigError, match="dynamic shared memory"):
        cuda._PreparedLaunch(launcher, big, (128,), (128,), [np.int64(1)])
    assert len(launches) == 4


class _NvidiaLike:
    """The limits the rule and restrictions read, of an H200 under CUDA or NVIDIA's OpenCL."""

    mma_sync, kind, max_work_group_size, local_mem_size, compute_units = True, "gpu", 1024, 48 * 1024, 132

    def __init__(self, backend, optin=None, wgmma=False):
        self.backend, self.local_mem_optin, self.wgmma = backend, optin, wgmma


@pytest.mark.parametrize("backend, optin, wgmma", [("cuda", 227 * 1024, True), ("cuda", 163 * 1024, False),
                                                   ("opencl", 227 * 1024, False), ("opencl", None, False)])
def test_gemm_mma_rule_picks_a_valid_tile_per_shape_class(backend, optin, wgmma):
    """Skinny problems get small tiles, big squares the largest ring the device allows; every pick
    fits the device with its 128 bytes of alignment (NVIDIA's OpenCL: static arrays up to the opt-in
    maximum on the compute capabilities it is known for, 48 KiB elsewhere); warpgroup MMA only where
    the device has it (Hopper under CUDA), for every problem but the skinny ones."""
    fam, dev = gemm_mma.SPEC, _NvidiaLike(backend, optin, wgmma)
    picks = {}
    for m, n, k in [(16, 4096, 4096), (4096, 64, 4096), (2048, 2048, 2048), (8192, 8192, 8192), (8192, 4096, 64)]:
        problem = {"m": m, "n": n, "k": k}
        p = picks[(m, n)] = fam.defaults(dev, problem)
        assert fam.is_valid(p, dev, problem), (m, n, k, p)
        assert gemm_mma.smem_bytes(p, False, False) + 128 <= (optin or dev.local_mem_size)
    assert picks[(16, 4096)]["BM"] <= 64 and picks[(4096, 64)]["BN"] <= 64
    big = picks[(8192, 8192)]
    assert big["BM"] * big["BN"] >= picks[(16, 4096)]["BM"] * picks[(16, 4096)]["BN"] * 4
    if optin:  # the 72 KiB ring, past the 48 KiB every device has
        assert gemm_mma.smem_bytes(big, False, False) > dev.local_mem_size
    assert [p.get("WGMMA", 0) for p in picks.values()] == [0, 0] + [int(wgmma)] * 3
    assert not fam.is_valid(dict(big, WGMMA=1), _NvidiaLike(backend, optin, False), {"m": 8192, "n": 8192, "k": 8192})


def test_every_ring_keeps_128_bytes_to_start_on_a_128_byte_boundary():
    """A static ring starts on a 128-byte boundary (NVIDIA's OpenCL puts bytes of its own before a
    kernel's arrays): a ring of exactly 48 KiB no longer fits in 48 KiB, one of 32 KiB does, and so
    does the 48 KiB ring where the device allows more (NVIDIA's OpenCL on sm_90, CUDA)."""
    fam, problem = gemm_mma.SPEC, {"m": 4096, "n": 4096, "k": 4096}
    full = dict(fam.defaults(_NvidiaLike("opencl")), BM=128, BN=128, BK=32, WM=2, WN=2, SWZ=1, STAGES=3)
    assert gemm_mma.smem_bytes(full, False, False) == 48 * 1024
    assert not fam.is_valid(full, _NvidiaLike("opencl"), problem)
    assert fam.is_valid(dict(full, STAGES=2), _NvidiaLike("opencl"), problem)
    for backend in ("opencl", "cuda"):
        assert fam.is_valid(full, _NvidiaLike(backend, 227 * 1024), problem)
        assert not fam.is_valid(dict(full, BN=256, WN=4, STAGES=6), _NvidiaLike(backend, 227 * 1024), problem)


def test_nvidia_opencl_takes_local_memory_to_the_opt_in_maximum_of_its_compute_capability():
    """NVIDIA's OpenCL reports 48 KiB but compiles static arrays up to CUDA's opt-in maximum per
    block: the device gets that limit for the compute capabilities it is known for, none elsewhere
    (and its ring stays a static array: not CUDA's dynamic shared memory)."""
    from types import SimpleNamespace

    from isthmus.backends.opencl import device as ocl_device

    class _Cl:  # the pyopencl parts OpenCLDevice.__init__ reads
        class device_type:
            GPU, CPU = 4, 2

        Error = RuntimeError

    def make(sm, vendor="NVIDIA Corporation"):
        d = SimpleNamespace(
            extensions="cl_nv_device_attribute_query" if sm else "", compute_capability_major_nv=sm // 10,
            compute_capability_minor_nv=sm % 10, type=4, name="GPU", vendor=vendor, global_mem_size=1 << 30,
            max_compute_units=132, max_work_group_size=1024, max_work_item_sizes=[1024, 1024, 64],
            local_mem_size=48 * 1024, driver_version="580", double_fp_config=1, max_mem_alloc_size=1 << 28,
            address_bits=64, native_vector_width_float=1)
        return ocl_device.OpenCLDevice(_Cl, SimpleNamespace(name="NVIDIA CUDA", version="OpenCL 3.0"), d, 0)

    h200, a100, ada, unknown, other = make(90), make(80), make(89), make(95), make(0, "Portable")
    assert (h200.local_mem_optin, a100.local_mem_optin, ada.local_mem_optin) == (227 * 1024, 163 * 1024, 99 * 1024)
    assert unknown.local_mem_optin is None and other.local_mem_optin is None
    # a user's kernel may declare __local arrays up to that much there (Kernel's launch check)
    assert (h200.local_mem_static, unknown.local_mem_static, other.local_mem_static) == (227 * 1024, 48 * 1024, 48 * 1024)
    assert not any(d.local_mem_dynamic for d in (h200, a100, ada, unknown, other))
    assert dict(gemm_mma._variant(h200, None, False, False, gemm_mma._Shape(1, 64, 64, 64, 0, 0, (64, 64)),
                                  None))["DYN_SMEM"] == 0


def test_gemm_mma_rule_leaves_other_devices_on_the_defaults(dev):
    """Devices without mma.sync (PoCL here) run the portable path with the defaults (CPU ones on a CPU)."""
    if dev.mma_sync:
        pytest.skip("a device with mma.sync")
    assert gemm_mma.SPEC.defaults(dev, {"m": 8192, "n": 8192, "k": 8192}) == gemm_mma.SPEC.defaults(dev)


def test_ops_gemm_takes_16_bit_floats_to_tensor_cores(dev, rng):
    for dt in DTYPES.values():
        a, b = _operands(rng, dt, 23, 31, 40, False, False)
        c = isthmus.ops.gemm(dev.asarray(a), dev.asarray(b))
        assert c.dtype == dt and c.shape == (23, 31)
        assert _err(c.to_numpy(), gemm_mma.reference(a, b)) <= _tol(dt)


def test_every_16_bit_result_is_rounded_to_nearest_even(dev, rng):
    """The f32 accumulator of an exact product is rounded once, as NumPy (ml_dtypes) rounds."""
    for dt in DTYPES.values():
        a = rng.standard_normal((16, 1)).astype(dt)
        b = rng.standard_normal((1, 24)).astype(dt)
        got = gemm_mma.run(dev.asarray(a), dev.asarray(b), alpha=1.0).to_numpy()
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dt)  # one product: exact in f32
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_gemm_mma_errors(dev):
    h = dev.empty((4, 8), np.float16)
    bf = dev.empty((8, 4), BF16)
    with pytest.raises(isthmus.InvalidArgumentError, match="inner dimensions"):
        gemm_mma.run(h, h)
    with pytest.raises(isthmus.InvalidArgumentError, match="dtype"):
        gemm_mma.run(h, bf)
    with pytest.raises(isthmus.UnsupportedDtypeError, match="float16 or bfloat16"):
        gemm_mma.run(dev.empty((4, 8), np.float32), dev.empty((8, 4), np.float32))
    with pytest.raises(isthmus.UnsupportedDtypeError, match="out_dtype"):
        gemm_mma.run(h, h, trans_b=True, out_dtype="float64")
    with pytest.raises(isthmus.InvalidArgumentError, match="batch"):
        gemm_mma.run(dev.empty((2, 4, 8), np.float16), dev.empty((3, 8, 4), np.float16))
    with pytest.raises(isthmus.InvalidArgumentError, match="2-D or 3-D"):
        gemm_mma.run(dev.empty((1, 2, 4, 8), np.float16), h, trans_b=True)
    with pytest.raises(isthmus.InvalidArgumentError, match="beta"):
        gemm_mma.run(h, h, trans_b=True, beta=1.0)
    with pytest.raises(isthmus.InvalidArgumentError, match="shape"):
        gemm_mma.run(h, h, dev.empty((4, 5), np.float16), trans_b=True)
    with pytest.raises(isthmus.InvalidArgumentError, match="dtype"):
        gemm_mma.run(h, h, dev.empty((4, 4), BF16), trans_b=True)
    with pytest.raises(isthmus.InvalidArgumentError, match="Buffer"):
        gemm_mma.run(np.zeros((4, 8), np.float16), h)
