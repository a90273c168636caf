"""Simulated annealing over the space's neighbourhood graph (one parameter changes per move).

A move goes to an unseen neighbour when there is one (seen configs teach nothing new); a worse
config is accepted with probability exp(-(relative slowdown) / T), T cooling geometrically; after
``patience`` moves without a new best the walk restarts from the best config or, half of the time,
from a random unseen one with the temperature reset, so a budget is not spent circling one basin.
"""
from __future__ import annotations

import math

OPTIONS = {
    "T": (0.5, "starting temperature (relative slowdown accepted with probability 1/e)"),
    "T_min": (0.005, "lowest temperature"),
    "alpha": (0.85, "cooling factor per move"),
    "jump": (0.1, "probability that a move changes one parameter to any value, not to an adjacent one"),
    "patience": (50, "moves without a new best before a restart"),
    "start": (None, "config to start from (default: a random one)"),
}


def tune(space, cost, rng, options: dict) -> None:
    seen = cost.seen  # (Space.key of every config measured so far)

    def unseen_random():
        left = [c for c in space.configs if space.key(c) not in seen]
        return rng.choice(left) if left else None

    start = options["start"]
    current = dict(start) if start is not None and start in space else space.random(rng)
    current_t = cost(current)
    best, best_t = current, current_t
    temp, stale = options["T"], 0
    while len(seen) < len(space):
        nbrs = space.neighbours(current, jump=rng.random() < options["jump"])
        fresh = [c for c in nbrs if space.key(c) not in seen]
        cand = rng.choice(fresh) if fresh else (rng.choice(nbrs) if nbrs else unseen_random())
        if cand is None:
            return
        t = cost(cand)
        if _accept(current_t, t, temp, rng):
            current, current_t = cand, t
        if t < best_t:
            best, best_t, stale = cand, t, 0
        else:
            stale += 1
        temp = max(options["T_min"], temp * options["alpha"])
        if stale >= options["patience"] or not fresh and not nbrs:
            restart = best if rng.random() < 0.5 else unseen_random()
            current = restart if restart is not None else best
            current_t = cost(current)
            temp, stale = options["T"], 0


def _accept(old: float, new: float, temp: float, rng) -> bool:
    if new <= old:
        return True
    if not math.isfinite(new):
        return False
    if not math.isfinite(old):
        return True
    return rng.random() < math.exp(-((new - old) / old) / temp)
