"""A Llama-family checkpoint's tensors on the device, by role, checked against the config."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..buffer import Buffer
from ..dtypes import lookup
from ..errors import FormatError
from .config import LlamaConfig


@dataclass
class Layer:
    ln1: Buffer
    q: Buffer
    k: Buffer
    v: Buffer
    o: Buffer
    ln2: Buffer
    gate: Buffer
    up: Buffer
    down: Buffer
    gate_up: Buffer | None = None  # (2 * intermediate, hidden): gate's rows then up's (gate, up then None)
    q_bias: Buffer | None = None  # (1, q_size) rows for the bias gemm (Qwen2, attention_bias)
    k_bias: Buffer | None = None
    v_bias: Buffer | None = None
    o_bias: Buffer | None = None


# The MLP's gate and up projections as one weight (one gemm a layer, silu_mul of its halves): made at
# load through the host, a layer at a time. (Module-level so that a measurement can compare.)
FUSE_GATE_UP = True
_FLOATS = ("float32", "float16", "bfloat16")


class Weights:
    """The model's buffers: those of the checkpoint (``SafeTensors``, closed together) and any this
    object made (converted dtypes, views), closed by :meth:`close`."""

    def __init__(self, dev, path, cfg: LlamaConfig, dtype=None):
        self._own: list[Buffer] = []
        self._tensors = dev.load_safetensors(path)
        try:
            # the dtype every tensor of the forward has: asked, else the embedding's
            if dtype is None and "model.embed_tokens.weight" in self._tensors:
                dtype = self._tensors["model.embed_tokens.weight"].dtype
            self.dtype = lookup(dtype if dtype is not None else cfg.torch_dtype)
            if self.dtype.name not in _FLOATS:
                raise FormatError(f"{self._tensors.source}: the model's dtype {self.dtype.name} is not supported; "
                                  f"float32, float16 or bfloat16")
            self._take(cfg)
        except Exception:
            self.close()
            raise

    def _take(self, cfg: LlamaConfig) -> None:
        h, qs, kvs, i = cfg.hidden_size, cfg.q_size, cfg.kv_size, cfg.intermediate_size
        self.embed = self._get("model.embed_tokens.weight", (cfg.vocab_size, h))
        self.layers: list[Layer] = []
        for n in range(cfg.num_hidden_layers):
            p = f"model.layers.{n}."
            a = p + "self_attn."
            layer = Layer(
                ln1=self._get(p + "input_layernorm.weight", (h,)), q=self._get(a + "q_proj.weight", (qs, h)),
                k=self._get(a + "k_proj.weight", (kvs, h)), v=self._get(a + "v_proj.weight", (kvs, h)),
                o=self._get(a + "o_proj.weight", (h, qs)), ln2=self._get(p + "post_attention_layernorm.weight", (h,)),
                gate=self._get(p + "mlp.gate_proj.weight", (i, h)), up=self._get(p + "mlp.up_proj.weight", (i, h)),
                down=self._get(p + "mlp.down_proj.weight", (h, i)))
            if cfg.attention_bias:
                layer.q_bias = self._row(self._get(a + "q_proj.bias", (qs,)))
                layer.k_bias = self._row(self._get(a + "k_proj.bias", (kvs,)))
                layer.v_bias = self._row(self._get(a + "v_proj.bias", (kvs,)))
                if cfg.o_bias:
                    layer.o_bias = self._row(self._get(a + "o_proj.bias", (h,)))
            if FUSE_GATE_UP:
                layer.gate_up = self._stack(layer.gate, layer.up)
                layer.gate = layer.up = None
            self.layers.append(layer)
        self.norm = self._get("model.norm.weight", (h,))
        if cfg.tie_word_embeddings:
            self.lm_head = self.embed
        elif "lm_head.weight" not in self._tensors:
            raise FormatError(f"{self._tensors.source}: no tensor 'lm_head.weight', and config.json has "
                              f"tie_word_embeddings = false (set it true if the embedding is the LM head)")
        else:
            self.lm_head = self._get("lm_head.weight", (cfg.vocab_size, h))

    def _get(self, name: str, shape: tuple) -> Buffer:
        t = self._tensors
        if name not in t:
            raise FormatError(f"{t.source}: no tensor {name!r} (a LlamaForCausalLM checkpoint has it)")
        b = t[name]
        if tuple(b.shape) != shape:
            raise FormatError(f"{t.source}: tensor {name!r} has shape {tuple(b.shape)}, the config gives {shape}")
        if b._dt is not self.dtype:
            if b._dt.name not in _FLOATS:
                raise FormatError(f"{t.source}: tensor {name!r} has dtype {b.dtype}; a model takes float tensors")
            # another float dtype than the model's (norms kept in float32, or dtype= asked): converted
            # through the host one tensor at a time
            host = b.to_numpy().astype(np.float32).astype(self.dtype.np)
            b = b.device.asarray(host)
            self._own.append(b)
        return b

    def _stack(self, a: Buffer, b: Buffer) -> Buffer:
        """One buffer of a's rows then b's (uploaded through the host at offsets); a and b closed."""
        dev = a.device
        out = dev.empty((a.shape[0] + b.shape[0],) + a.shape[1:], a.dtype)
        self._own.append(out)
        hosts = [a.to_numpy(), b.to_numpy()]
        mem = out._handle()
        for wait in [dev.allocator.upload_async(mem, 0, hosts[0]), dev.allocator.upload_async(mem, a.nbytes, hosts[1])]:
            wait()
        a.close()
        b.close()
        return out

    def _row(self, b: Buffer) -> Buffer:
        view = b.reshape(1, b.size)
        self._own.append(view)
        return view

    def close(self) -> None:
        for b in self._own:
            b.close()
        self._own = []
        self._tensors.close()
