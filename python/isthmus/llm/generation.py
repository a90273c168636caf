"""GenerationConfig (how tokens are chosen, when generation stops) and GenerationResult."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError

_K_MAX = 1024  # isthmus.ops.sample's largest top_k


def _int(name: str, v, lo: int, hi: int, hint: str = "") -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise InvalidArgumentError(f"GenerationConfig: {name} must be an integer in [{lo}, {hi}]{hint}, got {v!r}")
    return int(v)


def _real(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
        raise InvalidArgumentError(f"GenerationConfig: {name} must be a finite number, got {v!r}")
    return float(v)


@dataclass(frozen=True)
class GenerationConfig:
    """How to pick tokens and when to stop.

    ``temperature`` 0 is greedy (top_k and top_p do not apply); otherwise Hugging Face's sampling:
    logits / temperature, the ``top_k`` largest (0: all, at most 1024), the nucleus of mass
    ``top_p``, drawn on the device with ``seed`` (the same seed gives the same tokens). A sequence
    stops after ``max_new_tokens`` or at one of ``stop_tokens`` (which is part of its output).

    >>> GenerationConfig(max_new_tokens=64, temperature=0.7, top_p=0.9, seed=1, stop_tokens=(2,))
    """
    max_new_tokens: int = 32
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    stop_tokens: tuple = ()

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "max_new_tokens", _int("max_new_tokens", self.max_new_tokens, 1, 1 << 30))
        t = _real("temperature", self.temperature)
        if t < 0:
            raise InvalidArgumentError(f"GenerationConfig: temperature must be >= 0 (0: greedy), got {t}")
        set_(self, "temperature", t)
        set_(self, "top_k", _int("top_k", self.top_k, 0, _K_MAX, " (0: no top-k filter)"))
        p = _real("top_p", self.top_p)
        if not 0 < p <= 1:
            raise InvalidArgumentError(f"GenerationConfig: top_p must be in (0, 1] (1: no nucleus filter), got {p}")
        set_(self, "top_p", p)
        set_(self, "seed", _int("seed", self.seed, 0, (1 << 64) - 1))
        stops = self.stop_tokens
        if isinstance(stops, (int, np.integer)) and not isinstance(stops, bool):
            stops = (stops,)
        if isinstance(stops, (str, bytes)) or not hasattr(stops, "__iter__"):
            raise InvalidArgumentError(f"GenerationConfig: stop_tokens must be a sequence of token ids, got {stops!r}")
        set_(self, "stop_tokens", tuple(_int("stop_tokens[]", s, 0, (1 << 31) - 1) for s in stops))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass
class GenerationResult:
    """What generate() returns: the generated ids per prompt (a stop token included when hit), the
    logits at each prompt's last position (float32 (batch, vocab), when asked) and throughput."""
    tokens: list = field(default_factory=list)
    last_logits: np.ndarray | None = None
    prompt_tokens_per_s: float = 0.0
    decode_tokens_per_s: float = 0.0
    stats: dict = field(default_factory=dict)
