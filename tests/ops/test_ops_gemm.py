"""gemm for every shape: transposes, batches (strided, shared weights), skinny and tall problems,
each variant (tiled, split-K, cpu) forced at odd sizes on every device, the grid-stride loops,
the shape rule, and typed errors for bad input."""
import numpy as np
import pytest

import isthmus
from isthmus.ops.specs import gemm as G
from isthmus.ops.resolve import forced, forget_resolved
from isthmus.ops.spec import rel_error


def _reference(a, b, *args, **kw):
    """gemm's reference in float64 arithmetic, rounded to a's dtype."""
    return G.reference(np, a.astype(np.float64), b.astype(np.float64), *args, **kw).astype(a.dtype)


TOL = {"float32": 3e-6, "float64": 1e-13, "float16": 4e-3}
# small tiles keep the compile short on a CPU; every variant is still exercised in full
VARIANTS = {
    "tiled": {"VARIANT": 0, "TM": 16, "TN": 16, "TK": 8, "WPTM": 2, "WPTN": 4},
    "split-k": {"VARIANT": 1, "TM": 16, "TN": 16, "TK": 8, "WPTM": 2, "WPTN": 4, "KS": 4},
    "cpu": {"VARIANT": 2, "CM": 4, "CN": 2, "CV": 4, "CR": 2},
    "rows": {"VARIANT": 3, "RM": 2, "RN": 2, "RW": 4},
}


def _params(fam, variant: str) -> dict:
    """A variant's config: its own parameters over every tunable's default (the others stay pinned)."""
    return {**{t.name: t.default for t in fam.tunables}, **VARIANTS[variant]}


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _operands(rng, dtype, m, n, k, ta, tb, batch_a=None, batch_b=None):
    sa = (k, m) if ta else (m, k)
    sb = (n, k) if tb else (k, n)
    a = rng.standard_normal(((batch_a,) if batch_a else ()) + sa).astype(dtype)
    b = rng.standard_normal(((batch_b,) if batch_b else ()) + sb).astype(dtype)
    return a, b


def _forward_error(got, ref, a, b, ta, tb, alpha, c0=None, beta=0.0):
    """|got - ref| over the size of the products' terms (|alpha| |op(a)| @ |op(b)| + |beta c|): the
    bound rounding obeys even where the terms cancel (a 1 x 1 result near zero)."""
    mag = _reference(np.abs(a), np.abs(b), None if c0 is None else np.abs(c0), abs(alpha), abs(beta), ta, tb)
    mag = np.asarray(mag, np.float64)  # (a float16 norm's sum of squares overflows)
    return float(np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(mag), 1e-300))


def _check(dev, rng, dtype, m, n, k, ta, tb, batch_a=None, batch_b=None):
    """gemm against NumPy: beta == 0 over a NaN-poisoned C, then beta != 0 over a random C."""
    a, b = _operands(rng, dtype, m, n, k, ta, tb, batch_a, batch_b)
    batch = batch_a or batch_b
    shape = ((batch,) if batch else ()) + (m, n)
    da, db = dev.asarray(a), dev.asarray(b)
    poisoned = dev.asarray(np.full(shape, np.nan, dtype))
    out = isthmus.ops.gemm(da, db, poisoned, alpha=0.5, trans_a=ta, trans_b=tb)
    assert out is poisoned and out.shape == shape
    ref = _reference(a, b, alpha=0.5, trans_a=ta, trans_b=tb)
    got = out.to_numpy()
    assert not np.isnan(got).any(), "unwritten (poisoned) elements"
    assert _forward_error(got, ref, a, b, ta, tb, 0.5) <= TOL[dtype] * max(1, np.sqrt(k)), rel_error(got, ref)
    c0 = rng.standard_normal(shape).astype(dtype)
    got = isthmus.ops.gemm(da, db, dev.asarray(c0), alpha=-1.25, beta=0.75, trans_a=ta, trans_b=tb).to_numpy()
    ref = _reference(a, b, c0, -1.25, 0.75, ta, tb)
    assert _forward_error(got, ref, a, b, ta, tb, -1.25, c0, 0.75) <= TOL[dtype] * max(1, np.sqrt(k)), rel_error(got, ref)


# float32 in every layout; the other dtypes in two each (each case compiles a program of its own)
@pytest.mark.parametrize("dtype, ta, tb", [("float32", False, False), ("float32", True, False),
                                           ("float32", False, True), ("float32", True, True),
                                           ("float64", False, False), ("float64", True, True),
                                           ("float16", False, True), ("float16", True, False)])
def test_transposes_with_the_default_rule(dev, rng, dtype, ta, tb):
    _need(dev, dtype)
    for m, n, k in ((1, 1, 1), (1, 67, 131), (61, 3, 97), (37, 41, 29)):
        _check(dev, rng, dtype, m, n, k, ta, tb)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_batched_one_launch_with_shared_operands(dev, rng, ta, tb):
    _check(dev, rng, "float32", 13, 19, 23, ta, tb, batch_a=5, batch_b=5)
    _check(dev, rng, "float32", 16, 29, 37, ta, tb, batch_a=3)  # weights shared by every entry
    _check(dev, rng, "float32", 7, 11, 5, ta, tb, batch_b=4)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_every_variant_at_odd_sizes(dev, rng, variant, ta, tb):
    """Each variant, forced, at M = 1, primes, K not a multiple of TK (or of CV), K = 0, batches; and
    at rows of a multiple of 4 (16-byte loads) with edges that are not."""
    fam = G.family_for(ta, tb)
    params = _params(fam, variant)
    assert fam.is_valid(params, dev, {"m": 64, "n": 64, "k": 64}, None) == (variant != "cpu" or dev.kind == "cpu")
    with forced(fam, params):
        for m, n, k in ((1, 37, 53), (1, 1, 131), (67, 5, 131), (17, 33, 9), (3, 2, 1), (33, 36, 68), (36, 20, 44)):
            _check(dev, rng, "float32", m, n, k, ta, tb)
        _check(dev, rng, "float32", 19, 23, 41, ta, tb, batch_a=3)
        _check(dev, rng, "float32", 5, 18, 7, ta, tb, batch_a=2, batch_b=2)
        c0 = rng.standard_normal((5, 7)).astype(np.float32)
        a, b = _operands(rng, np.float32, 5, 7, 0, ta, tb)
        out = isthmus.ops.gemm(dev.asarray(a), dev.asarray(b), dev.asarray(c0), beta=2.0, trans_a=ta, trans_b=tb)
        np.testing.assert_allclose(out.to_numpy(), 2 * c0, rtol=1e-6)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_more_tiles_and_batches_than_groups_launched(dev, rng, monkeypatch, variant):
    """The kernels walk M tiles and batch entries past the launched groups (CUDA's 65535 along y
    and z): with the cap forced to 2, every tile and entry must still be computed."""
    monkeypatch.setattr(G, "GRID_YZ_MAX", 2)
    forget_resolved()  # recipes remember grids
    try:
        fam = G.family_for(False, True)
        with forced(fam, _params(fam, variant)):
            _check(dev, rng, "float32", 149, 21, 19, False, True, batch_a=5)
    finally:
        forget_resolved()


@pytest.mark.parametrize("variant", ["tiled", "split-k", "rows"])
def test_the_grid_loop_build_only_where_the_grid_is_too_small(dev, monkeypatch, variant):
    """A launch whose tiles fit the grid runs a build without the grid-stride loops; one that does
    not (the cap forced to 2) gets the GRID_LOOP build."""
    fam = G.family_for(False, True)
    f32 = isthmus.dtypes.lookup("float32")
    forget_resolved()
    try:
        with forced(fam, _params(fam, variant)):
            fits = G._steps(dev, f32, False, True, 1, 40, 8, 8, 0, 0, 320, (40, 8))[0]  # (kernel, global, local, args)
            monkeypatch.setattr(G, "GRID_YZ_MAX", 2)
            past = G._steps(dev, f32, False, True, 1, 40, 8, 8, 0, 0, 320, (40, 8))[0]
    finally:
        forget_resolved()
    assert fits[0].program.defines.get("GRID_LOOP", 0) == 0
    assert fits[0].name == ("gemm_rows" if variant == "rows" else "gemm")
    if variant == "rows":  # no GRID_LOOP build of it (PoCL 5.0's compiler aborts on its barrier in a
        # loop): past the grid the tiled kernel runs, with its loop where its own tiles need it
        assert past[0].name == "gemm" and past[1][1] // past[2][1] <= 2
    else:
        assert past[0].program.defines["GRID_LOOP"] == 1 and past[1][1] == 2 * past[2][1]


def test_tall_m_beyond_the_cuda_grid(dev, rng):
    """m = 9,000,000 used to get "no configuration fits" (a CUDA grid limit applied everywhere)."""
    m, n, k = 9_000_000, 1, 2
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = isthmus.ops.gemm(dev.asarray(a), dev.asarray(b)).to_numpy()
    assert rel_error(got, _reference(a, b)) <= 1e-6
    fam = G.family_for(False, False)  # the tiled kernel: 562,500 tiles of 16 rows, walked in a loop
    with forced(fam, _params(fam, "tiled")):
        got = isthmus.ops.gemm(dev.asarray(a), dev.asarray(b)).to_numpy()
    assert rel_error(got, _reference(a, b)) <= 1e-6


class _Gpu:
    kind, compute_units, max_work_group_size, local_mem_size, local_mem_optin = "gpu", 132, 1024, 48 * 1024, None
    wgmma = False


class _Cpu:
    kind, compute_units, max_work_group_size, local_mem_size, local_mem_optin = "cpu", 2, 4096, 1 << 21, None
    wgmma = False


def test_the_rule_picks_a_variant_from_the_shape():
    gpu, cpu = _Gpu(), _Cpu()
    fam = G.family_for(False, True)
    one = fam.defaults(gpu, {"m": 1, "n": 11008, "k": 4096})  # x @ W.T, batch 1: GEMV-like
    assert one["VARIANT"] == 3 and one["RM"] == 1 and -(-11008 // (one["RW"] * one["RN"])) >= 2 * gpu.compute_units
    four = fam.defaults(gpu, {"m": 3, "n": 4096, "k": 4096})
    assert four["VARIANT"] == 3 and four["RM"] == 4 and four["RM"] * four["RN"] <= 32
    sixteen = fam.defaults(gpu, {"m": 16, "n": 4096, "k": 4096})  # split-K tiles from 5 rows on
    assert sixteen["VARIANT"] == 1 and sixteen["TM"] == 16 and sixteen["KS"] == 8
    skinny = fam.defaults(gpu, {"m": 64, "n": 4096, "k": 4096})
    assert skinny["VARIANT"] == 1 and (skinny["TM"], skinny["TN"], skinny["KS"]) == (64, 128, 8)
    wide = fam.defaults(gpu, {"m": 64, "n": 11008, "k": 4096})  # more tiles: fewer splits
    assert wide["VARIANT"] == 1 and (wide["TM"], wide["TN"], wide["KS"]) == (64, 128, 4)
    plain = G.family_for(False, False).defaults(gpu, {"m": 1, "n": 4096, "k": 4096})  # x @ W: no rows variant
    assert plain["VARIANT"] == 1 and plain["TM"] == 16
    square = fam.defaults(gpu, {"m": 4096, "n": 4096, "k": 4096})
    assert square["VARIANT"] == 0 and square["TM"] == square["TN"] == 128
    small = fam.defaults(gpu, {"m": 512, "n": 512, "k": 512})  # smaller tiles until they (nearly) fill the device
    assert small["VARIANT"] == 0 and (small["TM"], small["TN"]) == (32, 64)
    mid = fam.defaults(gpu, {"m": 1024, "n": 1024, "k": 1024})  # full tiles, split over K
    assert mid["VARIANT"] == 1 and (mid["TM"], mid["TN"], mid["KS"]) == (128, 128, 4)
    assert fam.defaults(cpu, {"m": 512, "n": 512, "k": 512})["VARIANT"] == 2
    gemv = fam.defaults(cpu, {"m": 1, "n": 4096, "k": 4096})
    assert gemv["VARIANT"] == 2 and gemv["CM"] * gemv["CR"] == 1
    for problem in ({"m": 16, "n": 4096, "k": 4096}, {"m": 1, "n": 7, "k": 3}, {"m": 9_000_000, "n": 2, "k": 3}):
        for d in (gpu, cpu):
            assert fam.is_valid(fam.defaults(d, problem), d, problem, None), (problem, d.kind)


def test_the_space_holds_each_variant_once():
    space = list(G.SPEC.space(_Cpu(), {"m": 256, "n": 256, "k": 256}))
    keys = {tuple(sorted(p.items())) for p in space}
    assert len(keys) == len(space)
    assert {p["VARIANT"] for p in space} == {0, 1, 2, 3}
    assert {p["VARIANT"] for p in G.SPEC.space(_Gpu(), {"m": 256, "n": 256, "k": 256})} == {0, 1, 3}
    assert all(p["KS"] == 4 for p in space if p["VARIANT"] != 1)  # pinned outside split-K
    assert all(p["TM"] == 128 and p["TK"] == 16 for p in space if p["VARIANT"] in (2, 3))
    assert all(p["RM"] == 4 and p["RW"] == 8 for p in space if p["VARIANT"] != 3)
    assert not G.SPEC.is_valid({**G.SPEC.defaults(_Gpu()), "KS": 8}, _Gpu())  # a pinned tunable moved


def test_transposed_families_have_their_own_tuning_key():
    from isthmus.tune.db import fingerprint

    opts = {fingerprint(G.family_for(ta, tb), "float32")[1] for ta in (0, 1) for tb in (0, 1)}
    assert len(opts) == 4 and G.family_for(False, False) is G.SPEC


def test_bad_inputs_get_typed_errors(dev):
    f = np.float32
    m = dev.zeros((4, 5), f)
    cases = [
        (lambda: isthmus.ops.gemm(m, dev.zeros((4, 3), f), trans_b=True), isthmus.InvalidArgumentError,
         r"a's columns \(5\) must equal b's columns \(trans_b\) \(3\)"),
        (lambda: isthmus.ops.gemm(m, dev.zeros((5, 3), f), trans_a=True), isthmus.InvalidArgumentError,
         r"a's rows \(trans_a\) \(4\) must equal b's rows \(5\)"),
        (lambda: isthmus.ops.gemm(dev.zeros((2, 4, 5), f), dev.zeros((3, 5, 6), f)), isthmus.InvalidArgumentError,
         "same leading"),
        (lambda: isthmus.ops.gemm(dev.zeros((1, 2, 4, 5), f), m), isthmus.InvalidArgumentError, "2-D or 3-D"),
        (lambda: isthmus.ops.gemm(dev.zeros((2, 4, 5), f), dev.zeros((5, 6), f), dev.zeros((4, 6), f)),
         isthmus.InvalidArgumentError, r"expected \(2, 4, 6\)"),
        (lambda: isthmus.ops.gemm(m, dev.zeros((5, 6), f), out_dtype=np.float64), isthmus.UnsupportedDtypeError,
         "out_dtype float64"),
        (lambda: isthmus.ops.gemm(m, dev.zeros((5, 6), f), out_dtype="complex64"), isthmus.UnsupportedDtypeError,
         "out_dtype"),
        (lambda: isthmus.ops.gemm(m, dev.zeros((5, 6), np.float64)), isthmus.InvalidArgumentError, "dtype"),
    ]
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
    assert isthmus.ops.gemm(m, dev.zeros((5, 6), f), out_dtype=np.float32).shape == (4, 6)


def test_empty_batches_and_rows(dev):
    out = isthmus.ops.gemm(dev.zeros((0, 4, 5), np.float32), dev.zeros((5, 6), np.float32))
    assert out.shape == (0, 4, 6)
    assert isthmus.ops.gemm(dev.zeros((0, 5), np.float32), dev.zeros((6, 5), np.float32), trans_b=True).shape == (0, 6)


def test_a_batch_of_small_matrices_takes_tiles_for_its_entries(tuning_db):
    """Without a tuned config, a batch of small matrices (32-1024 a side) on a GPU takes the tiles the
    rule gives one matrix on ceil(compute units / batch) units (bigger tiles as the batch fills the
    device), valid; a single matrix, skinny ones, CPU devices and a tuned config keep theirs."""
    from isthmus.ops.specs import gemm as G
    from isthmus.tune import db as dbmod
    from isthmus.tune.db import key_for

    class Gpu:
        kind, compute_units, max_work_group_size, local_mem_size, local_mem_optin = "gpu", 132, 1024, 49152, None
        wgmma = mma_sync = False
        compute_capability, native_vector_width_float, id = None, 0, "fake:0"

        def identity(self):
            return {"backend": "opencl", "vendor": "Fake", "name": "Fake GPU", "driver": "1.0", "platform": "p"}

    dev, f32, fam = Gpu(), isthmus.dtypes.lookup("float32"), G.SPEC
    tile = lambda p: (p["VARIANT"], p["TM"], p["TN"], p["WPTM"], p["WPTN"])  # noqa: E731
    for batch, m, n, k, want in [(512, 128, 128, 128, (0, 128, 128, 8, 8)), (1024, 64, 64, 64, (0, 64, 64, 4, 4)),
                                 (32, 128, 128, 64, (0, 32, 64, 4, 4))]:
        problem = {"m": m, "n": n, "k": k}
        one = fam.defaults(dev, problem, f32)
        got = G._batched_rule(fam, dev, f32, problem, one, batch)
        assert tile(got) == want and fam.is_valid(got, dev, problem, f32), (batch, m, got)
        assert G._batched_rule(fam, dev, f32, problem, one, 1) == one
    for problem in ({"m": 16, "n": 4096, "k": 4096}, {"m": 4096, "n": 4096, "k": 64}):
        one = fam.defaults(dev, problem, f32)
        assert G._batched_rule(fam, dev, f32, problem, one, 8) is one
    problem = {"m": 128, "n": 128, "k": 128}
    tuned = dict(fam.defaults(dev, problem, f32), TM=64, TN=64, WPTM=4, WPTN=4)
    dbmod.user().record(key_for(fam, dev, "float32", problem), problem, tuned, 1.0, "ok")
    dbmod.forget()
    assert G._batched_rule(fam, dev, f32, problem, tuned, 512) is tuned
