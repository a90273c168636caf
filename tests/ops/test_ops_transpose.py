"""transpose: every tile order and a spread of tile shapes forced explicitly, at odd, prime, tall and
wide shapes, into poisoned outputs, in every dtype; tall inputs past the old 65535-tile limit (issue
15 item 12: an (8M, 1) buffer got "no configuration fits" on OpenCL)."""
import itertools

import numpy as np
import pytest

import isthmus
from isthmus.dtypes import lookup
from isthmus.ops.resolve import forced
from isthmus.ops.specs.transpose import SPEC, grid

CONFIGS = [{"TILE": 16, "BLOCK_ROWS": 4, "ORDER": 0}, {"TILE": 8, "BLOCK_ROWS": 8, "ORDER": 1},
           {"TILE": 32, "BLOCK_ROWS": 2, "ORDER": 1}, {"TILE": 64, "BLOCK_ROWS": 4, "ORDER": 0}]
SHAPES = [(1, 1), (1, 7), (7, 1), (2, 3), (37, 129), (65, 3), (3, 65), (127, 131), (1, 100003), (100003, 1),
          (257, 1000)]
DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint8")


def _poisoned_out(dev, shape, dtype):
    fill = np.array(-7).astype(dtype) if np.dtype(dtype).kind in "iu" else np.nan
    return dev.asarray(np.full(shape[::-1], fill, dtype))


def _data(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _run(dev, params, x):
    out = _poisoned_out(dev, x.shape, x.dtype)
    with forced(SPEC, params):
        assert isthmus.ops.transpose(dev.asarray(x), out=out) is out
    return out.to_numpy()


def test_every_order_and_tile_at_odd_shapes(dev, rng):
    for params, shape in itertools.product(CONFIGS, SHAPES):
        if params["TILE"] * params["BLOCK_ROWS"] > dev.max_work_group_size:
            continue
        x = _data(rng, shape, "float32")
        np.testing.assert_array_equal(_run(dev, params, x), x.T, err_msg=f"{params} {shape}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_orders(dev, rng, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    for params, shape in itertools.product(CONFIGS[:2], [(37, 129), (1, 33), (33, 1)]):
        x = _data(rng, shape, dtype)
        np.testing.assert_array_equal(_run(dev, params, x), x.T, err_msg=f"{params} {shape} {dtype}")


def test_tall_and_wide_inputs_past_the_old_grid_limit(dev, rng):
    """(8M, 1), (1, 8M) and a (4.2M, 2) matrix (65625 row tiles of 64): every one used to be
    refused ("no configuration fits") by a CUDA grid limit applied on every device."""
    for shape in [(8 << 20, 1), (1, 8 << 20), (4_200_000, 2)]:
        x = _data(rng, shape, "uint8")
        out = isthmus.ops.transpose(dev.asarray(x)).to_numpy()
        assert out.shape == shape[::-1]
        np.testing.assert_array_equal(out, x.T, err_msg=f"{shape}")


def test_every_config_of_the_space_is_valid_for_tall_problems():
    """No restriction depends on how many tiles there are: the tiles run along grid dimension 0."""
    class Big:
        kind = "gpu"
        max_work_group_size = 1024
        local_mem_size = 49152
        local_mem_optin = None
        wgmma = False

    space = list(SPEC.space(Big(), {"rows": 1 << 30, "cols": 1}, lookup("float32")))
    assert len(space) == len(list(SPEC.space(Big(), {"rows": 64, "cols": 64}, lookup("float32")))) > 0


def test_grid_runs_along_dimension_0():
    p = {"TILE": 64, "BLOCK_ROWS": 4, "ORDER": 0}
    assert grid({"rows": 8 << 20, "cols": 1}, p) == (((8 << 20) // 64, 4), (64, 4))  # a copy: 4096 elements per group
    assert grid({"rows": 12345, "cols": 6789}, p) == ((193 * 107 * 64, 4), (64, 4))
    assert grid({"rows": 1, "cols": 1}, p) == ((64, 4), (64, 4))


def test_cpu_devices_default_to_whole_32x32_tiles(dev, rng):
    """A CPU's transpose (no tuned config): a 32x32 tile per work-group (1.2-1.8x the 16x4 tiles
    on PoCL), correct at odd shapes."""
    from isthmus.dtypes import lookup
    from isthmus.ops.resolve import resolve
    from isthmus.ops.specs.transpose import SPEC

    class _Cpu:
        kind = "cpu"

    assert SPEC.defaults(_Cpu()) == {"TILE": 32, "BLOCK_ROWS": 32, "ORDER": 0}
    if dev.kind == "cpu" and dev.max_work_group_size >= 1024:
        assert resolve(SPEC, dev, lookup("float32"), {"rows": 3001, "cols": 77})[0]["TILE"] == 32
    for shape in [(3001, 77), (33, 31), (1, 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(isthmus.ops.transpose(dev.asarray(x)).to_numpy(), x.T)
