"""LaunchConfig: the grid of one launch, a frozen, hashable, JSON-able value."""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .errors import LaunchConfigError


def _dims(value, what: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        dims = tuple(value)
    except TypeError as exc:
        raise LaunchConfigError(f"{what} must be an int or a sequence of 1 to 3 ints, got {value!r}") from exc
    if not 1 <= len(dims) <= 3:
        raise LaunchConfigError(f"{what} must have 1 to 3 dimensions, got {len(dims)}: {value!r}")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise LaunchConfigError(f"{what} must hold ints, got {d!r} in {value!r}")
        if d <= 0:
            raise LaunchConfigError(f"{what} must be positive in every dimension, got {value!r}")
    return tuple(int(d) for d in dims)


@dataclass(frozen=True)
class LaunchConfig:
    """Where a kernel runs: ``global_size`` work-items in total per dimension, in work-groups of
    ``local_size`` (``None`` lets the runtime pick). Sizes are OpenCL's (global = total items).

    >>> cfg = LaunchConfig((1024,), (256,))
    >>> LaunchConfig.from_json(cfg.to_json()) == cfg
    True
    """

    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None = None

    def __post_init__(self):
        g = _dims(self.global_size, "global_size")
        object.__setattr__(self, "global_size", g)
        if self.local_size is not None:
            loc = _dims(self.local_size, "local_size")
            if len(loc) != len(g):
                raise LaunchConfigError(f"local_size {loc} and global_size {g} have different dimensions")
            object.__setattr__(self, "local_size", loc)

    def to_dict(self) -> dict:
        return {"global_size": list(self.global_size),
                "local_size": None if self.local_size is None else list(self.local_size)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> "LaunchConfig":
        if not isinstance(data, dict) or "global_size" not in data:
            raise LaunchConfigError(f"a LaunchConfig needs a 'global_size', got {data!r}")
        return cls(tuple(data["global_size"]), None if data.get("local_size") is None else tuple(data["local_size"]))

    @classmethod
    def from_json(cls, text: str) -> "LaunchConfig":
        return cls.from_dict(json.loads(text))


def check_config(config: LaunchConfig, max_work_group_size: int, max_work_item_sizes: tuple[int, ...],
                 where: str) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The sizes of ``config`` if the device can run them; LaunchConfigError says why not."""
    if not isinstance(config, LaunchConfig):
        raise LaunchConfigError(f"config must be an isthmus.LaunchConfig, got {type(config).__name__}")
    g, loc = config.global_size, config.local_size
    if loc is None:
        return g, None
    total = int(np.prod(loc))
    if total > max_work_group_size:
        raise LaunchConfigError(f"local_size {loc} has {total} work-items; {where} allows at most "
                                f"{max_work_group_size} per work-group")
    for i, (gd, ld) in enumerate(zip(g, loc)):
        if i < len(max_work_item_sizes) and ld > max_work_item_sizes[i]:
            raise LaunchConfigError(f"local_size {loc}: dimension {i} is {ld}, {where} allows at most "
                                    f"{max_work_item_sizes[i]}")
        if gd % ld:
            raise LaunchConfigError(f"local_size {loc} does not divide global_size {g} in dimension {i} "
                                    f"({gd} % {ld} = {gd % ld}); round global_size up to a multiple")
    return g, loc
