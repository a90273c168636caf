"""A NumPy float64 Llama (LlamaForCausalLM's forward), written for the tests from the Hugging Face
definitions: it reads the checkpoint folder itself and shares no code with isthmus.llm."""
from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np

_NP = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "I32": np.int32, "I64": np.int64}


def read_safetensors(path) -> dict[str, np.ndarray]:
    raw = Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[a:b], _NP[e["dtype"]]).reshape(e["shape"]).astype(np.float64)
    return out


def inv_freq(d: int, theta: float, scaling: dict | None) -> np.ndarray:
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    if not scaling:
        return inv
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "linear":
        return inv / scaling["factor"]
    assert kind == "llama3", kind
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    low_wl, high_wl = old / low, old / high
    out = []
    for f in inv:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(f)
        elif wl > low_wl:
            out.append(f / factor)
        else:
            s = (old / wl - low) / (high - low)
            out.append((1 - s) * f / factor + s * f)
    return np.array(out)


class Reference:
    def __init__(self, folder):
        folder = Path(folder)
        self.c = json.loads((folder / "config.json").read_text())
        self.w = read_safetensors(folder / "model.safetensors")
        c = self.c
        self.d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        self.inv = inv_freq(self.d, c.get("rope_theta", 10000.0), c.get("rope_scaling"))

    def _rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.c["rms_norm_eps"]) * w

    def _rope(self, x, pos):  # x (T, heads, d), half-split (rotate_half)
        ang = pos[:, None].astype(np.float64) * self.inv[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        h = self.d // 2
        a, b = x[..., :h], x[..., h:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

    def logits(self, ids) -> np.ndarray:
        """The logits at every position of one sequence: float64 (len, vocab)."""
        c, w, d = self.c, self.w, self.d
        ids = np.asarray(ids)
        t = len(ids)
        nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
        x = w["model.embed_tokens.weight"][ids]
        pos = np.arange(t)
        mask = np.triu(np.full((t, t), -np.inf), 1)
        for i in range(c["num_hidden_layers"]):
            p, a = f"model.layers.{i}.", f"model.layers.{i}.self_attn."
            h = self._rms(x, w[p + "input_layernorm.weight"])
            q, k, v = (h @ w[a + n + "_proj.weight"].T + w.get(a + n + "_proj.bias", 0.0) for n in "qkv")
            q, k, v = q.reshape(t, nh, d), k.reshape(t, nkv, d), v.reshape(t, nkv, d)
            q, k = self._rope(q, pos), self._rope(k, pos)
            rep = nh // nkv
            k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
            s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(d) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            o = np.einsum("hqk,khd->qhd", s, v).reshape(t, nh * d)
            x = x + o @ w[a + "o_proj.weight"].T + w.get(a + "o_proj.bias", 0.0)
            h = self._rms(x, w[p + "post_attention_layernorm.weight"])
            g = h @ w[p + "mlp.gate_proj.weight"].T
            u = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
        x = self._rms(x, w["model.norm.weight"])
        head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
        return x @ head.T
