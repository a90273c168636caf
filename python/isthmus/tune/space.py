"""Search spaces: the product of a kernel's tunable values, cut by its restrictions (expressions over
the parameters, the problem sizes and the device limits), enumerated once per tuning run.

Strategies see a :class:`Space` as a list of configs (dicts) with indices, plus the neighbourhood
structure of the grid (change one parameter to an adjacent value), which is what lets a learning
strategy move through it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

# Kernels users declared (isthmus.tune.declare) are in the op registry with the library's:
# register(family), kernel_family(name) (None if unknown) and known_kernels() are the registry's.
from ..ops.registry import get as kernel_family, names as known_kernels, register  # noqa: F401
from ..ops.spec import OpSpec


class Config(dict):
    """One point of a search space (tunable name -> value): a frozen, hashable, JSON-able value,
    equal to the plain dict of the same items (``json.dumps`` and ``==`` treat it as one)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.items())))

    def _frozen(self, *args, **kwargs):
        raise TypeError("a tuning Config is frozen; make a new one: Config({**config, 'WG': 64})")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _frozen

    def __repr__(self) -> str:
        return f"Config({dict.__repr__(self)})"


@dataclass
class Space:
    """The valid configs of ``family`` for one device, problem and dtype."""

    family: OpSpec
    configs: list[dict]
    _index: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, family: OpSpec, device, problem: dict, dtype) -> "Space":
        configs = list(family.space(device, problem, dtype))
        return cls(family, configs, {cls.key(c): i for i, c in enumerate(configs)})

    @staticmethod
    def key(config: dict) -> tuple:
        return tuple(sorted(config.items()))

    def __len__(self) -> int:
        return len(self.configs)

    def __contains__(self, config: dict) -> bool:
        return self.key(config) in self._index

    def neighbours(self, config: dict, *, jump: bool = False) -> list[dict]:
        """Valid configs that differ from ``config`` in one parameter: by one step of its value list,
        or (``jump``) by any value."""
        out = []
        for t in self.family.tunables:
            pos = t.values.index(config[t.name])
            steps = [s - pos for s in range(len(t.values)) if s != pos] if jump else (-1, 1)
            for step in steps:
                if 0 <= pos + step < len(t.values):
                    cand = {**config, t.name: t.values[pos + step]}
                    if cand in self:
                        out.append(cand)
        return out

    def random(self, rng: random.Random) -> dict:
        return dict(rng.choice(self.configs))
