"""softmax configs forced explicitly (the tuner's way, ``family.forced``): the row held in registers
(CACHE > 0) and the two-pass kernel at every work-group size, at odd sizes, into poisoned outputs,
against a NumPy float64 reference; and the restrictions that admit a held config only where the
row fits."""
import itertools

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.library.family import bucket, forced, resolve
from isthmus.library.softmax import FAMILY
from isthmus.tune import db as dbmod

FLOATS = ("float32", "float64", "float16")
# (rtol, atol) elementwise against the float64 reference (atol: below the dtype's normal range)
TOL = {"float32": (1e-5, 1e-38), "float64": (1e-12, 1e-300), "float16": (2e-3, 6e-8)}


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _reference64(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):  # an all -inf row: NaN, like the kernel
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _run(dev, params, x, *, in_place=False):
    """softmax of x with ``params`` forced, into a NaN-poisoned output (or x itself)."""
    out = dev.asarray(x) if in_place else dev.asarray(np.full(x.shape, np.nan, x.dtype))
    src = out if in_place else dev.asarray(x)
    with forced(FAMILY, params):
        assert isthmus.ops.softmax(src, out=out) is out
    return out.to_numpy()


def _check(out, x, dtype, what):
    ref = _reference64(x)
    rtol, atol = TOL[dtype]
    assert out.shape == x.shape and out.dtype == x.dtype
    assert not np.isnan(out[~np.isnan(ref)]).any(), f"{what}: unwritten (poisoned) or NaN elements"
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _data(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    x.flat[0] = 60 if dtype != "float16" else 11  # large logits must not overflow
    return x


def _configs(dev, shape, dtype, held: bool) -> list[dict]:
    problem = {"rows": shape[0], "cols": shape[1]}
    return [p for p in FAMILY.space(dev, problem, lookup(dtype)) if (p["CACHE"] > 0) == held]


def _spread(configs: list[dict]) -> list[dict]:
    """The smallest and the largest work-group: the two ends of the space, for the slower dtypes."""
    return configs if len(configs) <= 2 else [configs[0], configs[-1]]


# cols: 1, primes and non-multiples of WG*VPT, and exactly WG*VPT*CACHE (1024, 8192: every held
# config there covers the row exactly); rows: 1 and more
HELD_SHAPES = [(1, 1), (7, 1), (1, 1000), (33, 129), (5, 1024), (3, 4097), (2, 8192)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", HELD_SHAPES)
def test_held_row_matches_reference(dev, rng, dtype, shape):
    _need(dev, dtype)
    configs = _configs(dev, shape, dtype, held=True)
    assert configs, f"no held config for {shape}"
    x = _data(rng, shape, dtype)
    for params in configs if dtype == "float32" else _spread(configs):
        _check(_run(dev, params, x), x, dtype, f"{params} {shape}")


@pytest.mark.parametrize("wg", [32, 64, 128, 256, 512, 1024])
def test_two_pass_every_work_group_size(dev, rng, wg):
    """CACHE = 0 streams the row twice; the two-level reduction runs with each WG's PARTS."""
    if wg > dev.max_work_group_size:
        pytest.skip(f"{dev.id}: work-groups of at most {dev.max_work_group_size}")
    vpt = {32: 1, 1024: 8}.get(wg, 4)  # VPT only sets the loads per step: 1, 4 and 8 all run
    for shape in ((3, 1000), (2, 1), (1, 5 * wg * vpt + 3)):
        params = {"WG": wg, "VPT": vpt, "CACHE": 0}
        x = _data(rng, shape, "float32")
        _check(_run(dev, params, x), x, "float32", f"{params} {shape}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_held_row_special_values(dev, rng, dtype):
    """-inf gives 0, an all -inf row gives NaN; an item holding only -inf in a row whose max is far
    below 0 (exp(-max) overflows) still writes 0, not 0 * inf."""
    _need(dev, dtype)
    shape = (6, 300)
    x = _data(rng, shape, dtype)
    x[1, ::3] = -np.inf
    x[2, :] = -np.inf
    x[3, :] = -np.inf
    x[3, 7] = -200.0
    x[4, :] = -np.inf
    x[4, :2] = (-1000.0, -1000.5)
    x[5, :] = -np.inf
    x[5, -1] = 0.0
    configs = _spread(_configs(dev, shape, dtype, held=True)) + [{"WG": 64, "VPT": 4, "CACHE": 0}]
    for params in configs:
        out = _run(dev, params, x)
        assert np.isnan(out[2]).all(), params
        _check(out, x, dtype, f"{params}")


def test_held_row_in_place(dev, rng):
    shape = (9, 777)
    x = _data(rng, shape, "float32")
    for params in _spread(_configs(dev, shape, "float32", held=True)):
        _check(_run(dev, params, x, in_place=True), x, "float32", f"in place {params}")


def test_held_config_beyond_its_rows_is_still_correct(dev, rng):
    """Forced past the restriction (only the tuner's forcing can do that), the columns the registers
    do not hold are streamed and read again: slower, never wrong."""
    for params, shape in (({"WG": 32, "VPT": 1, "CACHE": 1}, (3, 1000)), ({"WG": 64, "VPT": 8, "CACHE": 2}, (2, 3001))):
        assert not FAMILY.is_valid(params, dev, {"rows": shape[0], "cols": shape[1]}, lookup("float32"))
        x = _data(rng, shape, "float32")
        _check(_run(dev, params, x), x, "float32", f"{params} {shape}")


def test_empty_with_a_held_config(dev):
    with forced(FAMILY, {"WG": 64, "VPT": 1, "CACHE": 1}):
        assert isthmus.ops.softmax(dev.empty((0, 5), np.float32)).shape == (0, 5)
        assert isthmus.ops.softmax(dev.empty((4, 0), np.float32)).shape == (4, 0)


# ---- restrictions (no kernels run) ----------------------------------------------------------------
class _Big:
    """Device limits that rule nothing out: the space's own rules only."""

    kind = "gpu"
    max_work_group_size = 1024
    local_mem_size = 1 << 20


def _valid(params, cols, dtype="float32", device=_Big()):
    return FAMILY.is_valid(params, device, {"rows": 8, "cols": cols}, lookup(dtype))


def test_restriction_rejects_a_held_config_when_the_row_is_too_long():
    p = {"WG": 256, "VPT": 4, "CACHE": 1}  # holds 1024 columns
    assert _valid(p, 1024) and _valid(p, 513)
    assert not _valid(p, 1025) and not _valid(p, 8192)
    assert not _valid(p, 512)  # its one step would be half past the row: (256, 2, 1) does it
    assert _valid({"WG": 256, "VPT": 1, "CACHE": 1}, 1)  # VPT = CACHE = 1 fits any row up to WG
    assert not _valid({"WG": 256, "VPT": 4, "CACHE": 2}, 2048)  # VPT=8 CACHE=1 loads the same
    two_pass = {"WG": 256, "VPT": 4, "CACHE": 0}  # the default stays general
    assert all(_valid(two_pass, c) for c in (1, 1000, 8192, 1 << 20, (1 << 31) - 2048))


def test_held_configs_at_the_gpu_sizes():
    """One held config per work-group size whose registers fit the row."""
    def held(cols, dtype):
        return {(p["WG"], p["VPT"], p["CACHE"]) for p in FAMILY.space(_Big(), {"rows": 8, "cols": cols},
                                                                      lookup(dtype)) if p["CACHE"]}
    assert held(8192, "float32") == {(1024, 8, 1), (512, 8, 2), (256, 8, 4), (128, 8, 8)}
    assert held(8192, "float64") == held(8192, "float32")
    assert held(4096, "float32") == {(1024, 4, 1), (512, 8, 1), (256, 8, 2), (128, 8, 4), (64, 8, 8)}
    assert held(16384, "float32") == {(1024, 8, 2), (512, 8, 4), (256, 8, 8)}
    assert held(16384, "float64") == set()  # 128 KiB of registers per row: two-pass only
    assert held(1 << 20, "float32") == set()


def test_validity_is_the_same_across_a_bucket():
    """Configs are memoized per problem bucket, so a held config valid for one row length must be
    valid for every length in its bucket."""
    configs = [dict(zip(("WG", "VPT", "CACHE"), v)) for v in itertools.product(*(t.values for t in FAMILY.tunables))]
    for cols in list(range(1, 300)) + [511, 512, 513, 1000, 1023, 1024, 1025, 4097, 8191, 8192, 8193, 12000]:
        for p in configs:
            assert _valid(p, cols) == _valid(p, bucket(cols)), (p, cols)


def test_a_tuned_held_config_is_not_used_for_longer_rows(dev, tuning_db):
    """A held config tuned at 1024 columns is the nearest bucket for 1500: rejected there (the
    defaults run), used at 1000."""
    from isthmus.tune.db import key_for

    held = {"WG": 64, "VPT": 8, "CACHE": 2}
    assert FAMILY.is_valid(held, dev, {"rows": 4, "cols": 1024}, lookup("float32"))
    dbmod.user().record(key_for(FAMILY, dev, "float32", {"rows": 4, "cols": 1024}), {"rows": 4, "cols": 1024},
                        held, 1.0, "ok")
    dbmod.forget()
    f32 = lookup("float32")
    assert resolve(FAMILY, dev, f32, {"rows": 4, "cols": 1000})[0] == held
    longer = resolve(FAMILY, dev, f32, {"rows": 4, "cols": 1500})[0]
    assert longer["CACHE"] == 0 or longer["WG"] * longer["VPT"] * longer["CACHE"] >= 1500
