"""Random Llama checkpoints in Hugging Face format, for tests, demos and benchmarks (no model can
be downloaded where they run).

>>> path = write_random_llama(tmp / "tiny", vocab_size=517, hidden_size=72, num_attention_heads=3,
...                           num_key_value_heads=1, intermediate_size=200, num_hidden_layers=2)
>>> model = LlamaModel.load(path, dev)
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..errors import InvalidArgumentError

_CODES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
_BLOCK = 1 << 22  # tensors larger than this repeat a random block of this many values (fast for 8B shapes)

# the published shapes of two Llama models (config.json's fields), for benchmarks
LLAMA_3_2_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                    num_attention_heads=32, num_key_value_heads=8, head_dim=64, rope_theta=500000.0,
                    rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                    tie_word_embeddings=True, max_position_embeddings=131072, rms_norm_eps=1e-5,
                    bos_token_id=128000, eos_token_id=128001)
LLAMA_3_1_8B = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=8, head_dim=128, rope_theta=500000.0,
                    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                    tie_word_embeddings=False, max_position_embeddings=131072, rms_norm_eps=1e-5,
                    bos_token_id=128000, eos_token_id=128001)


def write_random_llama(path, *, vocab_size: int = 517, hidden_size: int = 72, intermediate_size: int = 200,
                       num_hidden_layers: int = 2, num_attention_heads: int = 3, num_key_value_heads: int = 1,
                       head_dim: int | None = None, dtype: str = "bfloat16", tie_word_embeddings: bool = False,
                       rope_scaling: dict | None = None, rope_theta: float = 10000.0,
                       max_position_embeddings: int = 2048, rms_norm_eps: float = 1e-5,
                       bos_token_id: int | None = None, eos_token_id=None, model_type: str = "llama",
                       attention_bias: bool = False, seed: int = 0) -> Path:
    """Write a Hugging Face model folder of random weights (config.json + model.safetensors with the
    LlamaForCausalLM tensor names) and return its path. Projections are scaled by 1/sqrt(fan-in) and
    the LM head so that logits spread over a few units (distinct top tokens); ``dtype`` float32,
    float16 or bfloat16. ``model_type="qwen2"`` with ``attention_bias=True`` gives Qwen2's q/k/v
    biases. The same arguments give the same files."""
    if dtype not in _CODES:
        raise InvalidArgumentError(f"write_random_llama: dtype must be one of {', '.join(_CODES)}, got {dtype!r}")
    head_dim = head_dim or hidden_size // num_attention_heads
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    arch = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}[model_type]
    config = {"architectures": [arch], "model_type": model_type, "vocab_size": vocab_size,
              "hidden_size": hidden_size, "intermediate_size": intermediate_size,
              "num_hidden_layers": num_hidden_layers, "num_attention_heads": num_attention_heads,
              "num_key_value_heads": num_key_value_heads, "head_dim": head_dim, "hidden_act": "silu",
              "rms_norm_eps": rms_norm_eps, "rope_theta": rope_theta, "rope_scaling": rope_scaling,
              "tie_word_embeddings": tie_word_embeddings, "max_position_embeddings": max_position_embeddings,
              "torch_dtype": dtype, "attention_bias": attention_bias, "mlp_bias": False,
              "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True}
    if bos_token_id is not None:
        config["bos_token_id"] = bos_token_id
    if eos_token_id is not None:
        config["eos_token_id"] = eos_token_id
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    specs = _tensors(config, head_dim)
    _write_safetensors(out / "model.safetensors", specs, dtype, np.random.default_rng(seed))
    return out


def _tensors(c: dict, d: int) -> list[tuple[str, tuple, str, float]]:
    """(name, shape, kind, scale) of every tensor: kind "normal" (scale = std) or "norm" (1 + scale * N)."""
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    qs, kvs = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    tie = c["tie_word_embeddings"]
    t = [("model.embed_tokens.weight", (v, h), "normal", 3.0 / math.sqrt(h) if tie else 1.0)]
    for n in range(c["num_hidden_layers"]):
        p, a = f"model.layers.{n}.", f"model.layers.{n}.self_attn."
        t += [(p + "input_layernorm.weight", (h,), "norm", 0.1),
              (a + "q_proj.weight", (qs, h), "normal", 1.0 / math.sqrt(h)),
              (a + "k_proj.weight", (kvs, h), "normal", 1.0 / math.sqrt(h)),
              (a + "v_proj.weight", (kvs, h), "normal", 1.0 / math.sqrt(h)),
              (a + "o_proj.weight", (h, qs), "normal", 1.0 / math.sqrt(qs))]
        if c["attention_bias"]:
            t += [(a + "q_proj.bias", (qs,), "normal", 0.5), (a + "k_proj.bias", (kvs,), "normal", 0.5),
                  (a + "v_proj.bias", (kvs,), "normal", 0.5)]
            if c["model_type"] == "llama":
                t.append((a + "o_proj.bias", (h,), "normal", 0.5))
        t += [(p + "post_attention_layernorm.weight", (h,), "norm", 0.1),
              (p + "mlp.gate_proj.weight", (i, h), "normal", 1.0 / math.sqrt(h)),
              (p + "mlp.up_proj.weight", (i, h), "normal", 1.0 / math.sqrt(h)),
              (p + "mlp.down_proj.weight", (h, i), "normal", 1.0 / math.sqrt(i))]
    t.append(("model.norm.weight", (h,), "norm", 0.1))
    if not tie:
        t.append(("lm_head.weight", (v, h), "normal", 3.0 / math.sqrt(h)))
    return t


def _chunks(rng, shape: tuple, kind: str, scale: float):
    """The tensor's values in float32, in chunks of at most _BLOCK: fresh normals for a small tensor;
    for a large one a fresh random block repeated at random shifts (cheap for billions of values)."""
    n = int(np.prod(shape))
    block = rng.standard_normal(min(n, _BLOCK) + (4096 if n > _BLOCK else 0), dtype=np.float32)
    block *= np.float32(scale)
    if kind == "norm":
        block += np.float32(1.0)
    if n <= _BLOCK:
        yield block
        return
    for s in range(0, n, _BLOCK):
        k = int(rng.integers(0, 4096))
        yield block[k:k + min(_BLOCK, n - s)]


def _write_safetensors(path: Path, specs: list, dtype: str, rng) -> None:
    """The safetensors format written directly (8-byte header length, JSON header, data), one
    tensor at a time (bfloat16 through ml_dtypes)."""
    if dtype == "bfloat16":
        import ml_dtypes

        np_dt = np.dtype(ml_dtypes.bfloat16)
    else:
        np_dt = np.dtype(dtype)
    header, offset = {}, 0
    for name, shape, _, _ in specs:
        nbytes = int(np.prod(shape)) * np_dt.itemsize
        header[name] = {"dtype": _CODES[dtype], "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for name, shape, kind, scale in specs:
            for chunk in _chunks(rng, shape, kind, scale):
                f.write(chunk.astype(np_dt).tobytes())
    tmp.replace(path)
