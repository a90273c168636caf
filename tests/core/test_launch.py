import json

import pytest

import isthmus
from isthmus.launch import LaunchConfig, check_config


def test_config_is_frozen_hashable_and_round_trips_json():
    cfg = LaunchConfig((1024, 3), (256, 1))
    assert hash(cfg) == hash(LaunchConfig([1024, 3], [256, 1]))
    assert LaunchConfig.from_json(cfg.to_json()) == cfg
    assert json.loads(cfg.to_json()) == {"global_size": [1024, 3], "local_size": [256, 1]}
    with pytest.raises(AttributeError):
        cfg.global_size = (1,)


def test_int_sizes_and_default_local():
    cfg = LaunchConfig(100)
    assert cfg.global_size == (100,) and cfg.local_size is None
    assert LaunchConfig.from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize("g,l", [((0,), None), ((-4,), None), ((8,), (0,)), ((1, 2, 3, 4), None), ((8,), (2, 2)),
                                 ((2.5,), None), ((True,), None), ("abc", None), ((), None)])
def test_bad_sizes_are_launch_config_errors(g, l):
    with pytest.raises(isthmus.LaunchConfigError):
        LaunchConfig(g, l)


def test_from_dict_rejects_garbage():
    with pytest.raises(isthmus.LaunchConfigError):
        LaunchConfig.from_dict({"local_size": [1]})


def test_check_config_limits():
    assert check_config(LaunchConfig((64,), (32,)), 256, (256, 256, 64), "dev") == ((64,), (32,))
    with pytest.raises(isthmus.LaunchConfigError, match="at most 256"):
        check_config(LaunchConfig((1024,), (512,)), 256, (512,), "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="does not divide"):
        check_config(LaunchConfig((100,), (32,)), 256, (256,), "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="dimension 2"):
        check_config(LaunchConfig((4, 4, 128), (1, 1, 128)), 256, (256, 256, 64), "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="LaunchConfig"):
        check_config((64,), 256, (256,), "dev")


# ---- grid and kernel limits (launch.check_grid, launch.check_kernel) --------------------------
from isthmus.launch import GridLimits, KernelLimits, check_grid, check_kernel  # noqa: E402

_OPENCL_LIKE = GridLimits(index_bits=64, max_groups=(2**32 - 1,) * 3, max_total_groups=2**32 - 1,
                          runtime_picks_local=True)
_CUDA_LIKE = GridLimits(index_bits=64, max_groups=(2**31 - 1, 65535, 65535), max_total_groups=2**63 - 1,
                        runtime_picks_local=False)


@pytest.mark.parametrize("g,l,match", [
    ((2**64,), None, "dimension 0 is 18446744073709551616"),
    ((2**32, 2**32), None, "in all"),
    ((2**62,), None, "pass a local_size"),
    ((2**32 + 15,), None, "pass a local_size"),        # a prime count: the driver could pick groups of 1
    ((65536, 65536, 65536), None, "pass a local_size"),
    ((2**44,), (64,), "in dimension 0"),
    ((2**20, 2**20), (1, 1), "in dimension 1|in all"),
])
def test_grids_beyond_the_backends_index_width_or_group_count_are_refused(g, l, match):
    with pytest.raises(isthmus.LaunchConfigError, match=match):
        check_grid(g, l, _OPENCL_LIKE, "dev")


def test_grid_limits_allow_what_the_device_can_run():
    check_grid((2**32 - 1,), None, _OPENCL_LIKE, "dev")
    check_grid((2**43,), (4096,), _OPENCL_LIKE, "dev")
    check_grid((2**40,), None, _CUDA_LIKE, "dev")  # isthmus picks CUDA blocks and checks its pick
    with pytest.raises(isthmus.LaunchConfigError, match="65535"):
        check_grid((256, 65536 * 4), (256, 4), _CUDA_LIKE, "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="index"):
        check_config(LaunchConfig((2**64,), (1,)), 256, (256,), "dev", _CUDA_LIKE)


def test_kernel_limits_cover_work_group_local_and_private_memory():
    limits = KernelLimits(max_work_group_size=128, local_mem=4096, private_mem=1024)
    check_kernel("k", (128,), limits, 4096, 1024, "dev")
    check_kernel("k", None, limits, 4096, None, "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="runs at most 128"):
        check_kernel("k", (16, 16), limits, 4096, None, "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="local memory"):
        check_kernel("k", (64,), limits, 4095, None, "dev")
    with pytest.raises(isthmus.LaunchConfigError, match="private memory"):
        check_kernel("k", (64,), limits, 4096, 1023, "dev")
    check_kernel("k", (64,), KernelLimits(128, 0, None), 4096, 1, "dev")  # nothing reported: nothing to check
