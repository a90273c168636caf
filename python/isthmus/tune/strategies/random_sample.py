"""Random sampling without replacement: configs in an order shuffled by the seed."""
from __future__ import annotations

OPTIONS = {"fraction": (1.0, "largest share of the space to sample (the budget may stop it sooner)")}


def tune(space, cost, rng, options: dict) -> None:
    order = list(range(len(space)))
    rng.shuffle(order)
    for i in order[:max(1, round(options["fraction"] * len(order)))]:
        cost(space.configs[i])
