"""softmax: every variant forced explicitly (the tuner's way, ``family.forced``) -- narrow rows
(several rows per work-group), the row held in registers, a wide row held in part with the rest
streamed, split rows (several work-groups per row, meeting through a workspace, and their path
that reads the whole row when a sibling does not show up), a CPU's row loop, and the two-pass
kernel -- at odd sizes, in every float dtype (bfloat16 too), into poisoned outputs, against a
NumPy float64 reference; NaN and infinities as NumPy gives them; the rule that picks a variant from the row
length; and the restrictions that keep the tuning space to configs that make sense."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced, resolve
from isthmus.ops.spec import bucket
from isthmus.ops.specs.softmax import SPEC, rule
from isthmus.tune import db as dbmod

FLOATS = ("float32", "float64", "float16", "bfloat16")
BF16 = np.dtype(ml_dtypes.bfloat16)
# (rtol, atol) elementwise against the float64 reference (atol: below the dtype's normal range)
TOL = {"float32": (1e-5, 1e-38), "float64": (1e-12, 1e-300), "float16": (2e-3, 6e-8), "bfloat16": (8e-3, 1e-38)}

# Configs of each variant, small enough for any device (work-groups of at most 256).  A forced
# config is correct for any shape, so each runs at every shape below.
VARIANTS = {
    "narrow": [{"WG": 64, "RPG": 8, "VPT": 4, "CACHE": 1},      # teams of 8 holding 32 columns
               {"WG": 64, "RPG": 64, "VPT": 2, "CACHE": 1},     # one item per row
               {"WG": 128, "RPG": 4, "VPT": 8, "CACHE": 1}],    # teams of 32 holding 256
    "held": [{"WG": 64, "RPG": 1, "VPT": 8, "CACHE": 2},        # holds 1024
             {"WG": 32, "RPG": 1, "VPT": 1, "CACHE": 1}],       # holds 32
    "wide": [{"WG": 256, "RPG": 1, "VPT": 8, "CACHE": 8}],      # holds 16384, streams the rest
    "two-pass": [{"WG": 64, "RPG": 1, "VPT": 4, "CACHE": 0},
                 {"WG": 32, "RPG": 1, "VPT": 1, "CACHE": 0}],
    # chunks of 1024 held (4 groups a row) and of 32 (64 groups: most chunks of a short row are
    # empty, those of a long one also stream); SPIN -1: every group reads its whole row itself
    # (the path a group takes when its siblings do not run at the same time)
    "split": [{"WG": 64, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 4},
              {"WG": 64, "RPG": 1, "VPT": 1, "CACHE": 1, "SPLIT": 64}],
    # a row per item in three passes (CPUs; vectors where T is float or double on OpenCL)
    "rowloop": [{"WG": 4, "RPG": 4, "VPT": 4, "CACHE": 0, "ROWLOOP": 1},
                {"WG": 1, "RPG": 1, "VPT": 4, "CACHE": 0, "ROWLOOP": 1}],
    "split-alone": [{"WG": 64, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 4, "SPIN": -1}],
}
# cols: 1, 2, 3, around powers of two, primes, a vocabulary width + 1; rows: 1 and primes
SHAPES = [(1, 1), (7, 2), (13, 3), (5, 127), (3, 129), (2, 1031), (1, 16411), (3, 32001)]


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


def _reference64(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):  # NaN rows, like the kernel and like NumPy
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _run(dev, params, x, *, in_place=False):
    """softmax of x with ``params`` forced, into a NaN-poisoned output (or x itself)."""
    out = dev.asarray(x) if in_place else dev.asarray(np.full(x.shape, np.nan, x.dtype))
    src = out if in_place else dev.asarray(x)
    with forced(SPEC, params):
        assert isthmus.ops.softmax(src, out=out) is out
    return out.to_numpy()


def _check(out, x, dtype, what, params=None):
    ref = _reference64(x)
    rtol, atol = TOL[dtype]
    if params is not None:  # an item summing thousands of terms one by one (a narrow team forced
        # onto a long row, outside the restrictions) rounds like any serial float sum
        rtol *= max(1.0, x.shape[1] * params["RPG"] / params["WG"] / 512)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert not np.isnan(out[~np.isnan(ref)].astype(np.float64)).any(), f"{what}: unwritten (poisoned) or NaN elements"
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _data(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 4).astype(BF16 if dtype == "bfloat16" else dtype)
    x.flat[0] = 60 if dtype != "float16" else 11  # large logits must not overflow
    return x


def _configs(variant, dev):
    return [p for p in VARIANTS[variant] if p["WG"] <= dev.max_work_group_size]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_at_odd_sizes(dev, rng, variant):
    for params, shape in itertools.product(_configs(variant, dev), SHAPES):
        x = _data(rng, shape, "float32")
        _check(_run(dev, params, x), x, "float32", f"{variant} {params} {shape}", params)


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_in_float64_and_16_bit_floats(dev, rng, variant, dtype):
    _need(dev, dtype)
    params = _configs(variant, dev)[0]
    for shape in [(7, 2), (3, 129), (2, 1031), (2, 20011)]:
        x = _data(rng, shape, dtype)
        _check(_run(dev, params, x), x, dtype, f"{variant} {params} {shape}", params)


def _special_rows(rng, cols: int, dtype) -> np.ndarray:
    """Rows with NaN / +inf / -inf where each part of a kernel meets them: first, last, middle."""
    x = _data(rng, (12, cols), dtype)
    x[0, 0] = np.nan                 # the first element (alone among -inf pads in its item)
    x[1, -1] = np.nan                # the last
    x[2, cols // 2] = np.nan
    x[3, :] = -np.inf
    x[3, cols // 2] = np.nan         # NaN among -inf: still NaN
    x[4, :] = -np.inf                # all -inf: NaN, as NumPy
    x[5, ::3] = -np.inf              # some -inf: 0 there
    x[6, -1] = np.inf                # +inf: inf - inf is NaN, the row is NaN as in NumPy
    x[7, 0] = np.inf
    x[7, -1] = -np.inf
    x[8, :] = -np.inf
    x[8, -1] = -200.0                # one finite far below 0: exp(-max) would overflow
    x[9, :] = -np.inf
    x[9, :2] = (-1000.0, -1000.5)[:min(2, cols)]
    x[10, :] = np.nan
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_nan_and_infinities_as_numpy(dev, rng, variant, dtype):
    """A NaN anywhere in a row makes the whole row NaN (issue 15 item 10: a NaN that an item saw
    beside only -inf was dropped and the rest still summed to 1); +inf makes it NaN; -inf gives 0;
    all -inf gives NaN: exactly what NumPy (and torch) give."""
    _need(dev, dtype)
    for params, cols in itertools.product(_configs(variant, dev), (3, 130, 1500, 17000)):
        x = _special_rows(rng, cols, dtype)
        out = _run(dev, params, x)
        what = f"{variant} {params} cols={cols}"
        for r in (0, 1, 2, 3, 4, 6, 7, 10):
            assert np.isnan(out[r]).all(), f"{what}: row {r} should be all NaN, got {out[r][:8]}"
        for r in (5, 8, 9, 11):
            assert not np.isnan(out[r]).any(), f"{what}: row {r} has NaN"
        _check(out, x, dtype, what, params)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_in_place(dev, rng, variant):
    params = _configs(variant, dev)[-1]
    for shape in [(9, 77), (3, 20011)]:
        x = _data(rng, shape, "float32")
        _check(_run(dev, params, x, in_place=True), x, "float32", f"in place {variant} {params} {shape}", params)


@pytest.mark.parametrize("cols", [4, 128, 4096, 40000])
def test_the_rules_gpu_configs_compute_right(dev, rng, cols):
    """What the rule picks on a GPU (narrow, held, wide), run here at odd row counts."""
    params = SPEC.defaults(_Big(), {"rows": 3, "cols": cols}, lookup("float32"))
    if params["WG"] > dev.max_work_group_size:
        pytest.skip(f"{dev.id}: work-groups of at most {dev.max_work_group_size}")
    for shape in [(1, cols), (37, cols - 1)]:
        x = _data(rng, shape, "float32")
        _check(_run(dev, params, x), x, "float32", f"rule {params} {shape}")


def test_library_path_at_odd_shapes(dev, rng):
    """No forcing: what the op resolves on this device (rule, tuning database or defaults)."""
    for shape in [(1, 1), (1000, 3), (257, 128), (5, 4097)]:
        x = _data(rng, shape, "float32")
        _check(isthmus.ops.softmax(dev.asarray(x)).to_numpy(), x, "float32", f"library {shape}")


def test_empty(dev):
    for params in (VARIANTS["narrow"][0], VARIANTS["held"][0]):
        with forced(SPEC, params):
            assert isthmus.ops.softmax(dev.empty((0, 5), np.float32)).shape == (0, 5)
            assert isthmus.ops.softmax(dev.empty((4, 0), np.float32)).shape == (4, 0)


# ---- the rule and the restrictions (no kernels run) ------------------------------------------------
class _Big:
    """A GPU whose limits rule nothing out: the space's own rules only."""

    kind = "gpu"
    max_work_group_size = 1024
    local_mem_size = 1 << 20
    local_mem_optin = None
    wgmma = False


class _Cpu(_Big):
    kind = "cpu"


class _SmallGpu(_Big):
    """A GPU of work-groups up to 256 and 32 KiB of local memory: the rule stays inside them."""

    max_work_group_size = 256
    local_mem_size = 32768


class _TinyGpu(_Big):
    """A GPU of work-groups up to 64: split rows in smaller groups (chunks of 4096)."""

    max_work_group_size = 64


def _valid(params, cols, dtype="float32", device=_Big()):
    return SPEC.is_valid({"RPG": 1, "SPLIT": 1, "ROWLOOP": 0, **params}, device, {"rows": 8, "cols": cols},
                           lookup(dtype))


def _variant(p: dict, cols: int) -> str:
    if p["RPG"] > 1:
        return "narrow"
    if p["SPLIT"] > 1:
        return "split"
    if p["CACHE"] == 0:
        return "two-pass"
    return "held" if cols <= p["WG"] * p["VPT"] * p["CACHE"] else "wide"


def test_rule_picks_the_variant_from_the_row_length():
    def pick(cols, dtype="float32"):
        p = SPEC.defaults(_Big(), {"rows": 1000, "cols": cols}, lookup(dtype))
        assert p.pop("ROWLOOP") == 0  # a CPU's variant
        return _variant(p, cols), p
    assert pick(128) == ("narrow", {"WG": 256, "RPG": 32, "VPT": 8, "CACHE": 2, "SPLIT": 1})  # teams of 8 hold 16
    assert pick(500) == ("narrow", {"WG": 256, "RPG": 8, "VPT": 8, "CACHE": 2, "SPLIT": 1})
    assert pick(3) == ("narrow", {"WG": 256, "RPG": 256, "VPT": 4, "CACHE": 1, "SPLIT": 1})  # one item per row
    assert pick(32) == ("narrow", {"WG": 256, "RPG": 32, "VPT": 4, "CACHE": 1, "SPLIT": 1})  # teams of 8
    assert pick(1)[0] == pick(3)[0] == pick(512)[0] == "narrow"
    assert pick(4096) == ("held", {"WG": 256, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 1})  # the H200's tuned one
    assert pick(8192)[1] == {"WG": 512, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 1}
    # vocabulary widths: split into chunks of 8192 held by groups of 128 (the best measured)
    assert pick(32000) == ("split", {"WG": 128, "RPG": 1, "VPT": 8, "CACHE": 8, "SPLIT": 4})
    assert pick(32000, "float64") == pick(32000)
    assert pick(128256) == ("split", {"WG": 128, "RPG": 1, "VPT": 8, "CACHE": 8, "SPLIT": 16})
    assert pick(8193)[1]["SPLIT"] == 2 and pick(8192)[1]["SPLIT"] == 1
    assert pick(1 << 19)[1]["SPLIT"] == 64
    assert pick((1 << 19) + 1) == ("two-pass", {"WG": 1024, "RPG": 1, "VPT": 8, "CACHE": 0, "SPLIT": 1})
    # a CPU: a row per item at every width, about rows/8 rows per group (at most 64)
    def cpu(rows, cols):
        return SPEC.defaults(_Cpu(), {"rows": rows, "cols": cols}, lookup("float32"))
    assert cpu(9, 128) == {"WG": 2, "RPG": 2, "VPT": 4, "CACHE": 0, "SPLIT": 1, "ROWLOOP": 1}
    assert cpu(256, 32000) == {"WG": 32, "RPG": 32, "VPT": 4, "CACHE": 0, "SPLIT": 1, "ROWLOOP": 1}
    assert cpu(16384, 128) == cpu(16384, 3) == cpu(16384, 1 << 20) == {**cpu(256, 1), "WG": 64, "RPG": 64}
    assert cpu(1, 5)["WG"] == 1


@pytest.mark.parametrize("device", [_Big(), _Cpu(), _SmallGpu(), _TinyGpu()],
                         ids=["gpu", "cpu", "small-gpu", "tiny-gpu"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_rule_configs_are_valid_at_every_bucket(dtype, device):
    for e in range(0, 21):
        for cols in {1 << e, (1 << e) // 2 + 1}:
            p = SPEC.defaults(device, {"rows": 7, "cols": cols}, lookup(dtype))
            assert SPEC.is_valid(p, device, {"rows": 7, "cols": cols}, lookup(dtype)), (cols, p)
            assert p == SPEC.defaults(device) | rule({"rows": 8, "cols": bucket(cols)}, device, lookup(dtype))
            if p["CACHE"]:  # a held config holds the row (in SPLIT groups), or at least _HOLD_WIDE bytes of it
                assert (cols <= p["WG"] // p["RPG"] * p["VPT"] * p["CACHE"] * p["SPLIT"]
                        or p["WG"] * p["VPT"] * p["CACHE"] >= 16384)
            assert p["SPLIT"] == 1 or device.kind != "cpu"


def test_restriction_rejects_a_held_config_when_the_row_is_too_long():
    p = {"WG": 256, "VPT": 4, "CACHE": 1}  # holds 1024 columns
    assert _valid(p, 1024) and _valid(p, 513)
    assert not _valid(p, 1025) and not _valid(p, 8192)
    assert not _valid(p, 512)  # its one step would be half past the row: (256, 2, 1) does it
    assert _valid({"WG": 256, "VPT": 1, "CACHE": 1}, 1)  # VPT = CACHE = 1 fits any row up to WG
    assert not _valid({"WG": 256, "VPT": 4, "CACHE": 2}, 2048)  # VPT=8 CACHE=1 loads the same
    two_pass = {"WG": 256, "VPT": 4, "CACHE": 0}  # the default stays general
    assert all(_valid(two_pass, c) for c in (1, 1000, 8192, 1 << 20, (1 << 31) - 2048))
    wide = {"WG": 1024, "VPT": 8, "CACHE": 4}  # 128 KiB: may hold part of a longer row
    assert _valid(wide, 32768) and _valid(wide, 128256) and _valid(wide, 32769) and not _valid(wide, 16384)
    assert not _valid({"WG": 1024, "VPT": 8, "CACHE": 2}, 32768)  # holds half a row another config holds
    assert not _valid({"WG": 1024, "VPT": 8, "CACHE": 8}, 1 << 20)  # 256 KiB of registers


def test_narrow_restrictions():
    narrow = {"WG": 256, "RPG": 8, "VPT": 4, "CACHE": 1}  # teams of 32 hold 128
    assert _valid(narrow, 128) and _valid(narrow, 65)
    assert not _valid(narrow, 129)          # the team's registers do not hold the row
    assert not _valid({**narrow, "CACHE": 0}, 128)  # a narrow team holds its row
    assert not _valid({"WG": 256, "RPG": 2, "VPT": 1, "CACHE": 1}, 60)  # teams of 128 for 60 columns
    assert _valid({"WG": 256, "RPG": 2, "VPT": 1, "CACHE": 1}, 100)  # 100 is in the bucket of 128
    assert not _valid({"WG": 64, "RPG": 128, "VPT": 1, "CACHE": 1}, 1)  # more rows than items


def test_held_configs_at_the_gpu_sizes():
    """One held config per work-group size whose registers fit the row (one row per group)."""
    def held(cols, dtype):
        return {(p["WG"], p["VPT"], p["CACHE"]) for p in SPEC.space(_Big(), {"rows": 8, "cols": cols},
                                                                      lookup(dtype))
                if p["CACHE"] and p["RPG"] == 1 and p["SPLIT"] == 1}
    assert held(8192, "float32") == {(1024, 8, 1), (512, 8, 2), (256, 8, 4), (128, 8, 8)}
    assert held(8192, "float64") == held(8192, "float32")
    assert held(4096, "float32") == {(1024, 4, 1), (512, 8, 1), (256, 8, 2), (128, 8, 4), (64, 8, 8)}
    assert held(16384, "float32") == {(1024, 8, 2), (512, 8, 4), (256, 8, 8)}
    assert held(16384, "float64") == {(1024, 8, 2), (512, 8, 4), (256, 8, 8)}  # 128 KiB
    # past 128 KiB of row: the configs that hold at least 64 KiB of it, the rest streamed
    assert held(32768, "float64") == {(1024, 8, 1), (1024, 8, 2), (512, 8, 2), (512, 8, 4), (256, 8, 4),
                                      (256, 8, 8), (128, 8, 8)}
    assert held(1 << 20, "float32") == {(1024, 8, 2), (1024, 8, 4), (512, 8, 4), (512, 8, 8), (256, 8, 8)}


def test_split_configs_hold_their_chunk():
    """Split rows: every config holds its chunk (cols / SPLIT) entirely and more than half full,
    one row per group, on GPUs only; the rule's vocabulary configs are among them."""
    def split(cols, device=_Big()):
        return [p for p in SPEC.space(device, {"rows": 8, "cols": cols}, lookup("float32")) if p["SPLIT"] > 1]
    found = split(32000)
    assert {"WG": 512, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 4, "ROWLOOP": 0} in found
    for p in found:
        held = p["WG"] * p["VPT"] * p["CACHE"]
        assert p["RPG"] == 1 and held * p["SPLIT"] >= 32000 > held * p["SPLIT"] // 2, p
    assert {(p["WG"], p["SPLIT"]) for p in split(128256) if p["VPT"] * p["CACHE"] == 16} == {
        (1024, 8), (512, 16), (256, 32), (128, 64)}
    assert not split(32000, _Cpu())
    assert not _valid({"WG": 32, "VPT": 1, "CACHE": 1, "SPLIT": 64}, 2048)  # more groups than items
    assert not _valid({"WG": 64, "RPG": 2, "VPT": 8, "CACHE": 2, "SPLIT": 2}, 2048)
    assert not _valid({"WG": 512, "VPT": 8, "CACHE": 0, "SPLIT": 4}, 32000)  # a split chunk is held


def test_in_place_split_rows_run_one_group_per_row(dev):
    """In place, a split config runs with SPLIT = 1 (a late sibling's group reads the whole row,
    which the others may have written already): the same chunk held, the rest streamed."""
    from isthmus.ops.specs import softmax as sm
    with forced(SPEC, VARIANTS["split"][0]):
        assert sm._steps(dev, lookup("float32"), 5, 3001)[-1] > 8  # (..., workspace bytes): split rows'
        assert sm._steps(dev, lookup("float32"), 5, 3001, in_place=True)[-1] == 0  # no split: no workspace


def test_split_rows_reuse_their_workspace(dev, rng):
    """The same workspace serves launch after launch (the library keeps it with the op's recipe):
    each launch tells its chunks' pairs from an earlier launch's by the generation in every word, so
    fresh data each time must give fresh results; rows of 1 and 2 groups' worth, an odd count."""
    from isthmus.ops.specs import softmax as sm
    params = VARIANTS["split"][0]
    with forced(SPEC, params):
        kernel, g, loc, rows, cols, _, ws_nbytes = sm._steps(dev, lookup("float32"), 5, 3001)
    assert ws_nbytes == 8 * (1 + 2 * 5 * 4)
    ws = dev._workspace(kernel, ws_nbytes)
    assert dev._workspace(kernel, ws_nbytes) is ws  # the workspace stays with the kernel
    for _ in range(4):
        x = _data(rng, (5, 3001), "float32")
        bx, by = dev.asarray(x), dev.asarray(np.full(x.shape, np.nan, np.float32))
        dev.launch(kernel, g, loc, [rows, cols, bx, by, ws])
        _check(by.to_numpy(), x, "float32", f"split, workspace reused, {params}")


def test_validity_is_the_same_across_a_bucket():
    """Configs are memoized per problem bucket, so a config valid for one row length must be valid
    for every length in its bucket."""
    configs = [dict(zip([t.name for t in SPEC.tunables], v)) for v in itertools.product(*(t.values for t in SPEC.tunables))]
    # (what the tunables' `when` leaves out, and a CPU's small groups, kept out of the loop: too many)
    configs = [p for p in configs if all(p[t.name] == t.default or t.applies(p) for t in SPEC.tunables)
               and (p["WG"] >= 32 or p["ROWLOOP"])]
    for cols in list(range(1, 300)) + [511, 512, 513, 1000, 1023, 1024, 1025, 4097, 8191, 8192, 8193, 12000,
                                       32000, 32769, 128256]:
        for p in configs:
            assert _valid(p, cols) == _valid(p, bucket(cols)), (p, cols)


def test_a_tuned_held_config_is_not_used_for_longer_rows(dev, tuning_db):
    """A held config tuned at 1024 columns is the nearest bucket for 1500: rejected there (the
    defaults run), used at 1000."""
    from isthmus.tune.db import key_for

    held = {"WG": 64, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 1, "ROWLOOP": 0}
    assert SPEC.is_valid(held, dev, {"rows": 4, "cols": 1024}, lookup("float32"))
    dbmod.user().record(key_for(SPEC, dev, "float32", {"rows": 4, "cols": 1024}), {"rows": 4, "cols": 1024},
                        held, 1.0, "ok")
    dbmod.forget()
    f32 = lookup("float32")
    assert resolve(SPEC, dev, f32, {"rows": 4, "cols": 1000})[0] == held
    longer = resolve(SPEC, dev, f32, {"rows": 4, "cols": 1500})[0]
    assert longer["CACHE"] == 0 or longer["WG"] * longer["VPT"] * longer["CACHE"] >= 1500


def test_a_captured_split_launch_replays_right(dev, rng):
    """A graph captured with split rows keeps a workspace of its own (Device._workspace through the
    recorder), zeroed once when captured: no fill step is replayed (the generation tags need no
    reset), and every replay (fresh data each time) computes fresh results."""
    params = VARIANTS["split"][0]
    shape = (3, 2500)
    bx, by = dev.asarray(_data(rng, shape, "float32")), dev.empty(shape, np.float32)
    with forced(SPEC, params), dev.capture() as graph:
        isthmus.ops.softmax(bx, out=by)
    assert len(graph.steps) == 1  # the launch alone
    try:
        for _ in range(3):
            x = _data(rng, shape, "float32")
            bx.copy_from(x)
            by.copy_from(np.full(shape, np.nan, np.float32))
            graph.launch()
            _check(by.to_numpy(), x, "float32", f"graph replay, {params}")
    finally:
        graph.close()
