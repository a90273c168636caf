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
