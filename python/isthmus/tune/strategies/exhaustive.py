"""Exhaustive search: every config of the space, in enumeration order (a budget cuts it short)."""
from __future__ import annotations

OPTIONS: dict = {}


def tune(space, cost, rng, options: dict) -> None:
    for config in space.configs:
        cost(config)
