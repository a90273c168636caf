"""A genetic algorithm: tournament selection, uniform crossover, one-step mutations, elitism.

Children that break a restriction are redrawn (then replaced by a mutant of a parent); only
configs not seen before cost an evaluation, so a converged population does not eat the budget.
"""
from __future__ import annotations

import math

OPTIONS = {
    "population": (12, "configs per generation"),
    "elite": (2, "best configs carried unchanged into the next generation"),
    "mutation": (0.25, "probability that a child's parameter moves one step"),
    "generations": (1000, "most generations (the budget usually stops it first)"),
}


def tune(space, cost, rng, options: dict) -> None:
    seen = cost.seen  # (Space.key of every config measured so far)

    size = min(options["population"], len(space))
    population = [dict(c) for c in rng.sample(space.configs, size)]
    for _ in range(options["generations"]):
        scored = sorted(((cost(c), i, c) for i, c in enumerate(population)), key=lambda t: (t[0], t[1]))
        if len(seen) >= len(space):
            return
        nxt = [c for _, _, c in scored[:options["elite"]]]
        while len(nxt) < size:
            nxt.append(_child(space, _pick(scored, rng), _pick(scored, rng), rng, options["mutation"]))
        population = nxt


def _pick(scored, rng):
    """Tournament of two: the faster one (failed configs lose)."""
    x, y = rng.choice(scored), rng.choice(scored)
    best = x if (x[0], x[1]) <= (y[0], y[1]) else y
    return best[2] if math.isfinite(best[0]) or rng.random() < 0.2 else rng.choice(scored)[2]


def _child(space, a: dict, b: dict, rng, mutation: float) -> dict:
    for _ in range(10):
        child = {k: (a[k] if rng.random() < 0.5 else b[k]) for k in a}
        for t in space.family.tunables:
            if rng.random() < mutation:
                pos = t.values.index(child[t.name]) + rng.choice((-1, 1))
                if 0 <= pos < len(t.values):
                    child[t.name] = t.values[pos]
        if child in space:
            return child
    nbrs = space.neighbours(a, jump=True)
    return rng.choice(nbrs) if nbrs else space.random(rng)
