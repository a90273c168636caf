"""LlamaConfig: the fields of a Hugging Face ``config.json`` that a Llama-family model needs, checked.

Llama (``LlamaForCausalLM``), Mistral and Qwen2 share one layout: embedding, decoder layers of
RMSNorm, grouped-query attention with half-split rotary embedding and a SwiGLU MLP, a final norm
and a (tied or separate) LM head. Qwen2 adds q/k/v biases (``attention_bias`` in Llama's terms).
Anything outside that family is a FormatError naming the field that is not supported.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FormatError
from ..ops.specs.rope import scaling_key

_MODEL_TYPES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}
_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "fp32": "float32",
           "bf16": "bfloat16", "fp16": "float16", "half": "float16", "float": "float32"}


@dataclass(frozen=True)
class LlamaConfig:
    """A Llama-family model's shape and constants, as ``config.json`` gives them.

    >>> cfg = LlamaConfig.from_folder("Llama-3.2-1B/")
    >>> cfg.num_hidden_layers, cfg.head_dim
    (16, 64)
    """
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 2048
    torch_dtype: str = "float32"
    bos_token_id: int | None = None
    eos_token_id: tuple[int, ...] = ()
    model_type: str = "llama"
    attention_bias: bool = False  # q/k/v (and, for Llama, o) projection biases
    o_bias: bool = False
    sliding_window: int | None = None  # Mistral: keys a query sees at most (None: all)
    extra: dict = field(default_factory=dict, compare=False, repr=False)  # the rest of config.json

    # ---- reading ------------------------------------------------------------------------------
    @classmethod
    def from_folder(cls, path) -> "LlamaConfig":
        """The config of the model folder ``path`` (its ``config.json``), or of a config.json file."""
        p = Path(path)
        f = p / "config.json" if p.is_dir() else p
        if not f.is_file():
            raise FormatError(f"no config.json in {p}: a Hugging Face model folder holds config.json and "
                              f"model.safetensors")
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FormatError(f"{f} is not valid JSON: {exc}") from None
        return cls.from_dict(d, source=str(f))

    @classmethod
    def from_dict(cls, d, source: str = "config") -> "LlamaConfig":
        """The config from a dict as ``config.json`` holds it; a FormatError naming the field that is
        missing, mistyped, out of range or not supported."""
        if not isinstance(d, dict):
            raise FormatError(f"{source}: a model config must be a JSON object, got {type(d).__name__}")
        r = _Reader(d, source)
        model_type = r.get("model_type", str, "llama")
        if model_type not in _MODEL_TYPES:
            raise FormatError(f"{source}: model_type {model_type!r} is not supported; supported: "
                              f"{', '.join(_MODEL_TYPES)} (the Llama layout)")
        archs = d.get("architectures")
        if archs is not None:
            if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
                raise FormatError(f"{source}: architectures must be a list of class names, got {archs!r}")
            if not any(a in _MODEL_TYPES.values() for a in archs):
                raise FormatError(f"{source}: architectures {archs} holds no supported class; supported: "
                                  f"{', '.join(_MODEL_TYPES.values())}")
        act = r.get("hidden_act", str, "silu")
        if act != "silu":
            raise FormatError(f"{source}: hidden_act {act!r} is not supported; the Llama MLP takes 'silu'")
        if r.get("mlp_bias", bool, False):
            raise FormatError(f"{source}: mlp_bias = true is not supported (Llama's MLP has no biases)")
        vocab = r.positive("vocab_size")
        hidden = r.positive("hidden_size")
        inter = r.positive("intermediate_size")
        layers = r.positive("num_hidden_layers")
        heads = r.positive("num_attention_heads")
        kv_heads = r.positive("num_key_value_heads", heads)
        if heads % kv_heads:
            raise FormatError(f"{source}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads "
                              f"({kv_heads}) (grouped-query attention)")
        head_dim = d.get("head_dim")
        if head_dim is None:
            if hidden % heads:
                raise FormatError(f"{source}: hidden_size ({hidden}) is not a multiple of num_attention_heads "
                                  f"({heads}); give head_dim")
            head_dim = hidden // heads
        else:
            head_dim = r.positive("head_dim")
        if head_dim % 2:
            raise FormatError(f"{source}: head_dim = {head_dim} must be even (rotary embedding turns pairs)")
        eps = r.number("rms_norm_eps", 1e-6)
        params = d.get("rope_parameters")  # transformers 5 writes theta and scaling together
        if params is not None and not isinstance(params, dict):
            raise FormatError(f"{source}: rope_parameters must be an object, got {params!r}")
        theta = r.number("rope_theta", (params or {}).get("rope_theta", 10000.0))
        scaling = d.get("rope_scaling")
        if scaling is None and params is not None and params.get("rope_type", "default") != "default":
            scaling = {k: v for k, v in params.items() if k != "rope_theta"}
        scaling = _scaling(scaling, source)
        tie = r.get("tie_word_embeddings", bool, False)
        max_pos = r.positive("max_position_embeddings", 2048)
        dtype = r.get("torch_dtype", str, None) or r.get("dtype", str, None) or "float32"
        if dtype not in _DTYPES:
            raise FormatError(f"{source}: torch_dtype {dtype!r} is not supported; supported: float32, bfloat16, "
                              f"float16")
        bos = d.get("bos_token_id")
        if bos is not None and (isinstance(bos, bool) or not isinstance(bos, int) or bos < 0):
            raise FormatError(f"{source}: bos_token_id must be a non-negative integer or null, got {bos!r}")
        eos = _eos(d.get("eos_token_id"), source)
        bias = r.get("attention_bias", bool, model_type == "qwen2")
        window = d.get("sliding_window")
        if model_type == "qwen2" and not d.get("use_sliding_window", False):
            window = None
        if window is not None:
            window = r.positive("sliding_window")
        return cls(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                   num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim, rms_norm_eps=eps,
                   rope_theta=theta, rope_scaling=scaling, tie_word_embeddings=tie, max_position_embeddings=max_pos,
                   torch_dtype=_DTYPES[dtype], bos_token_id=bos, eos_token_id=eos, model_type=model_type,
                   attention_bias=bias, o_bias=bias and model_type == "llama", sliding_window=window, extra=dict(d))

    # ---- derived ------------------------------------------------------------------------------
    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    def to_dict(self) -> dict:
        """The fields as config.json writes them (for a Llama model)."""
        d = {"architectures": [_MODEL_TYPES[self.model_type]], "model_type": self.model_type,
             "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
             "intermediate_size": self.intermediate_size, "num_hidden_layers": self.num_hidden_layers,
             "num_attention_heads": self.num_attention_heads, "num_key_value_heads": self.num_key_value_heads,
             "head_dim": self.head_dim, "hidden_act": "silu", "rms_norm_eps": self.rms_norm_eps,
             "rope_theta": self.rope_theta, "rope_scaling": self.rope_scaling,
             "tie_word_embeddings": self.tie_word_embeddings,
             "max_position_embeddings": self.max_position_embeddings, "torch_dtype": self.torch_dtype,
             "attention_bias": self.attention_bias, "mlp_bias": False}
        if self.bos_token_id is not None:
            d["bos_token_id"] = self.bos_token_id
        if self.eos_token_id:
            d["eos_token_id"] = self.eos_token_id[0] if len(self.eos_token_id) == 1 else list(self.eos_token_id)
        return d


class _Reader:
    """Typed reads of config fields, each error naming the field."""

    def __init__(self, d: dict, source: str):
        self.d, self.source = d, source

    def get(self, name: str, kind: type, default):
        v = self.d.get(name, default)
        if v is None:
            return default
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            raise FormatError(f"{self.source}: {name} must be a {kind.__name__}, got {v!r}")
        return v

    def positive(self, name: str, default=None) -> int:
        v = self.d.get(name)
        if v is None:
            v = default
        if v is None:
            raise FormatError(f"{self.source}: the field {name} is missing (a positive integer)")
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise FormatError(f"{self.source}: {name} must be a positive integer, got {v!r}")
        return v

    def number(self, name: str, default) -> float:
        v = self.d.get(name, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise FormatError(f"{self.source}: {name} must be a positive number, got {v!r}")
        return float(v)


def _scaling(scaling, source: str) -> dict | None:
    if scaling is None:
        return None
    if not isinstance(scaling, dict):
        raise FormatError(f"{source}: rope_scaling must be an object or null, got {scaling!r}")
    try:
        key = scaling_key("rope_scaling", scaling)
    except Exception as exc:  # the rope op's check, which names the key
        raise FormatError(f"{source}: {exc}") from None
    return None if key[0] == "default" else dict(scaling)


def _eos(eos, source: str) -> tuple[int, ...]:
    if eos is None:
        return ()
    ids = eos if isinstance(eos, list) else [eos]
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise FormatError(f"{source}: eos_token_id must be a non-negative integer, a list of them or null, "
                          f"got {eos!r}")
    return tuple(ids)
