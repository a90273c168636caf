"""Rows: the activations of a forward over some rows (tokens), made once and reused."""
from __future__ import annotations

import numpy as np

from ..buffer import Buffer
from ..device import Device
from .config import LlamaConfig


class Rows:
    """The activations of a forward over ``n`` rows (tokens), reused across launches."""

    def __init__(self, dev: Device, cfg: LlamaConfig, n: int, dt, gate_up: bool = False):
        self.n = n
        self._all: list[Buffer] = []
        e = self._new
        self.res = e(dev, (n, cfg.hidden_size), dt)  # the residual stream
        self.xn = e(dev, (n, cfg.hidden_size), dt)  # its norm
        self.q = e(dev, (n, cfg.q_size), dt)
        self.k = e(dev, (n, cfg.kv_size), dt)
        self.v = e(dev, (n, cfg.kv_size), dt)
        self.o = e(dev, (n, cfg.q_size), dt)
        self.attn = e(dev, (n, cfg.hidden_size), dt)
        i = cfg.intermediate_size
        # the MLP's input projections: one (n, 2i) result of the fused weight (gate's half, then up's),
        # or two
        self.gate_up = e(dev, (n, 2 * i), dt) if gate_up else None
        self.gate = None if gate_up else e(dev, (n, i), dt)
        self.up = None if gate_up else e(dev, (n, i), dt)
        self.act = e(dev, (n, cfg.intermediate_size), dt)
        self.mlp = e(dev, (n, cfg.hidden_size), dt)
        heads, kvh, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.q3, self.k3, self.v3, self.o3 = (self._view(self.q, (n, heads, d)), self._view(self.k, (n, kvh, d)),
                                              self._view(self.v, (n, kvh, d)), self._view(self.o, (n, heads, d)))
        self.ones = dev.asarray(np.ones((n, 1), dt.np)) if cfg.attention_bias else None
        if self.ones is not None:
            self._all.append(self.ones)

    def _new(self, dev, shape, dt) -> Buffer:
        b = dev.empty(shape, dt.np)
        self._all.append(b)
        return b

    def _view(self, b: Buffer, shape) -> Buffer:
        v = b.reshape(shape)
        self._all.append(v)
        return v

    def close(self) -> None:
        for b in self._all:
            b.close()
        self._all = []
