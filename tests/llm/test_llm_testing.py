"""isthmus.llm.testing.write_random_llama: a Hugging Face folder that the format's own reader and
isthmus read, the same files for the same arguments."""
from __future__ import annotations

import json

import numpy as np
import pytest

import isthmus
from isthmus.llm import LlamaConfig
from isthmus.llm import testing
from isthmus.llm.testing import write_random_llama


def test_folder_readable_by_safetensors_and_deterministic(tmp_path):
    safetensors = pytest.importorskip("safetensors.numpy")
    a = write_random_llama(tmp_path / "a", dtype="float32", seed=7, tie_word_embeddings=False)
    b = write_random_llama(tmp_path / "b", dtype="float32", seed=7, tie_word_embeddings=False)
    c = write_random_llama(tmp_path / "c", dtype="float32", seed=8, tie_word_embeddings=False)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()
    t = safetensors.load_file(str(a / "model.safetensors"))
    cfg = LlamaConfig.from_folder(a)
    assert t["model.embed_tokens.weight"].shape == (cfg.vocab_size, cfg.hidden_size)
    assert t["model.layers.1.self_attn.k_proj.weight"].shape == (cfg.kv_size, cfg.hidden_size)
    assert "lm_head.weight" in t and len(t) == 3 + 9 * cfg.num_hidden_layers
    norm = t["model.norm.weight"]
    assert abs(norm.mean() - 1) < 0.1 and 0.02 < norm.std() < 0.3
    assert json.loads((a / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_files_load_on_the_device(tmp_path, dtype):
    p = write_random_llama(tmp_path, dtype=dtype, tie_word_embeddings=True, model_type="qwen2",
                           attention_bias=True)
    with isthmus.device().load_safetensors(p) as w:
        assert w["model.embed_tokens.weight"].dtype.name == dtype
        assert "lm_head.weight" not in w and "model.layers.0.self_attn.q_proj.bias" in w
        x = w["model.layers.1.mlp.down_proj.weight"].to_numpy().astype(np.float32)
        assert np.isfinite(x).all() and 0.5 < x.std() * np.sqrt(x.shape[1]) < 2


def test_large_tensors_repeat_a_random_block(tmp_path, monkeypatch):
    monkeypatch.setattr(testing, "_BLOCK", 1000)
    p = write_random_llama(tmp_path, dtype="float32", vocab_size=100, hidden_size=32, num_attention_heads=2,
                           num_key_value_heads=2, intermediate_size=40)
    from llm_reference import read_safetensors

    e = read_safetensors(p / "model.safetensors")["model.embed_tokens.weight"]
    assert e.shape == (100, 32) and np.isfinite(e).all() and 0.8 < e.std() < 1.2


def test_bad_dtype():
    with pytest.raises(isthmus.InvalidArgumentError, match="dtype"):
        write_random_llama("/nonexistent", dtype="int8")
