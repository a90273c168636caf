"""LaunchConfig: the grid of one launch, a frozen, hashable, JSON-able value."""
from __future__ import annotations

import json
import math
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


@dataclass(frozen=True)
class GridLimits:
    """How large a grid a backend can run: every global size, and the number of work-items in all,
    below ``2**index_bits`` (the width of the integers that index work-items); at most
    ``max_groups`` work-groups per dimension and ``max_total_groups`` in all. ``runtime_picks_local``:
    a launch without a local size gets its work-groups from the driver, which may make each
    work-item a work-group of its own (OpenCL), rather than from isthmus, which checks its pick
    (CUDA)."""

    index_bits: int
    max_groups: tuple[int, ...]
    max_total_groups: int
    runtime_picks_local: bool


def check_grid(g: tuple[int, ...], loc: tuple[int, ...] | None, limits: GridLimits, where: str) -> None:
    """LaunchConfigError unless ``limits`` allow the grid (global ``g``, local ``loc``)."""
    top = 1 << limits.index_bits
    total = 1
    for i, gd in enumerate(g):
        total *= gd
        if gd >= top:
            raise LaunchConfigError(f"global_size {g}: dimension {i} is {gd}; {where} indexes work-items with "
                                    f"{limits.index_bits}-bit integers (at most {top - 1})")
    if total >= top:
        raise LaunchConfigError(f"global_size {g} has {total} work-items in all; {where} indexes work-items with "
                                f"{limits.index_bits}-bit integers (at most {top - 1}): launch fewer, or loop")
    if loc is None:
        if limits.runtime_picks_local and total > limits.max_total_groups:
            raise LaunchConfigError(f"global_size {g} has {total} work-items and no local_size: the driver may make "
                                    f"each a work-group, and {where} runs at most {limits.max_total_groups} "
                                    f"work-groups; pass a local_size")
        return
    groups = 1
    for i, (gd, ld) in enumerate(zip(g, loc)):
        n = gd // ld
        groups *= n
        if n > limits.max_groups[i]:
            raise LaunchConfigError(f"global_size {g} / local_size {loc}: {n} work-groups in dimension {i}; "
                                    f"{where} runs at most {limits.max_groups[i]} there")
    if groups > limits.max_total_groups:
        raise LaunchConfigError(f"global_size {g} / local_size {loc}: {groups} work-groups in all; {where} runs "
                                f"at most {limits.max_total_groups}: use larger work-groups or launch fewer")


def check_config(config: LaunchConfig, max_work_group_size: int, max_work_item_sizes: tuple[int, ...],
                 where: str, grid: GridLimits | None = None) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The sizes of ``config`` if the device can run them (``grid``: its grid limits, when known);
    LaunchConfigError says why not."""
    if not isinstance(config, LaunchConfig):
        raise LaunchConfigError(f"config must be an isthmus.LaunchConfig, got {type(config).__name__}")
    g, loc = config.global_size, config.local_size
    if loc is None:
        if grid is not None:
            check_grid(g, None, grid, where)
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
    if grid is not None:
        check_grid(g, loc, grid, where)
    return g, loc


@dataclass(frozen=True)
class KernelLimits:
    """What one compiled kernel needs and allows on its device: the most work-items per work-group
    (its registers and memory can allow fewer than the device), and the bytes of local (shared)
    memory per work-group and of private memory per work-item it uses (None: not reported)."""

    max_work_group_size: int
    local_mem: int
    private_mem: int | None


def check_kernel(name: str, loc: tuple[int, ...] | None, limits: KernelLimits, local_mem_size: int,
                 private_mem_limit: int | None, where: str) -> None:
    """LaunchConfigError unless the kernel ``name`` can run work-groups of ``loc`` on the device."""
    if loc is not None:
        items = math.prod(loc)
        if items > limits.max_work_group_size:
            raise LaunchConfigError(f"local_size {loc} has {items} work-items; kernel {name!r} runs at most "
                                    f"{limits.max_work_group_size} per work-group on {where} (its registers and "
                                    f"memory allow no more): use a smaller local_size")
    if limits.local_mem > local_mem_size:
        raise LaunchConfigError(f"kernel {name!r} uses {limits.local_mem} bytes of local memory (its __local "
                                f"arrays); {where} has {local_mem_size} per work-group: make them smaller")
    if private_mem_limit is not None and limits.private_mem is not None and limits.private_mem > private_mem_limit:
        raise LaunchConfigError(f"kernel {name!r} uses {limits.private_mem} bytes of private memory per work-item "
                                f"(its private arrays); {where} allows {private_mem_limit}: make them smaller")
