"""isthmus.llm.LlamaConfig: Hugging Face config.json fields read and checked; every bad field a
FormatError (an InvalidArgumentError) naming it."""
from __future__ import annotations

import json

import pytest

import isthmus
from isthmus.llm import LlamaConfig

BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 517, "hidden_size": 72,
        "intermediate_size": 200, "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 1,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 2048, "torch_dtype": "bfloat16",
        "hidden_act": "silu", "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": [2, 3]}
LLAMA3 = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}


def test_fields_and_defaults():
    c = LlamaConfig.from_dict(BASE)
    assert (c.vocab_size, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim) == (517, 72, 3, 1, 24)
    assert c.eos_token_id == (2, 3) and c.bos_token_id == 1 and c.torch_dtype == "bfloat16"
    assert c.rope_scaling is None and not c.attention_bias and c.q_size == 72 and c.kv_size == 24
    c = LlamaConfig.from_dict({**BASE, "head_dim": 32, "rope_scaling": LLAMA3, "eos_token_id": 2,
                               "num_key_value_heads": None})
    assert c.head_dim == 32 and c.rope_scaling == LLAMA3 and c.eos_token_id == (2,) and c.num_key_value_heads == 3
    assert LlamaConfig.from_dict({**BASE, "rope_scaling": {"type": "linear", "factor": 2.0}}).rope_scaling["factor"] == 2
    assert LlamaConfig.from_dict({**BASE, "rope_scaling": {"rope_type": "default"}}).rope_scaling is None
    # transformers 5 writes theta and scaling as rope_parameters
    c = LlamaConfig.from_dict({k: v for k, v in BASE.items() if k != "rope_theta"}
                              | {"rope_parameters": {"rope_theta": 500000.0, **LLAMA3}})
    assert c.rope_theta == 500000.0 and c.rope_scaling["rope_type"] == "llama3"
    # Qwen2 (q/k/v biases) and Mistral (sliding_window) of the same layout
    q = LlamaConfig.from_dict({**BASE, "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"],
                               "sliding_window": 4096, "use_sliding_window": False})
    assert q.attention_bias and not q.o_bias and q.sliding_window is None
    m = LlamaConfig.from_dict({**BASE, "model_type": "mistral", "architectures": ["MistralForCausalLM"],
                               "sliding_window": 4096})
    assert m.sliding_window == 4096 and not m.attention_bias
    assert LlamaConfig.from_dict(LlamaConfig.from_dict(BASE).to_dict()) == LlamaConfig.from_dict(BASE)


@pytest.mark.parametrize("change, field", [
    ({"model_type": "gpt2"}, "model_type"), ({"architectures": ["GPT2LMHeadModel"]}, "architectures"),
    ({"architectures": "LlamaForCausalLM"}, "architectures"), ({"hidden_act": "gelu"}, "hidden_act"),
    ({"mlp_bias": True}, "mlp_bias"), ({"vocab_size": 0}, "vocab_size"), ({"vocab_size": None}, "vocab_size"),
    ({"hidden_size": "72"}, "hidden_size"), ({"intermediate_size": -1}, "intermediate_size"),
    ({"num_hidden_layers": 2.0}, "num_hidden_layers"), ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_key_value_heads": 2}, "num_key_value_heads"), ({"num_attention_heads": 5}, "head_dim"),
    ({"head_dim": 23}, "head_dim"), ({"head_dim": 0}, "head_dim"), ({"rms_norm_eps": -1.0}, "rms_norm_eps"),
    ({"rope_theta": "big"}, "rope_theta"), ({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, "rope_type"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "low_freq_factor"),
    ({"rope_scaling": {"rope_type": "linear", "factor": -2.0}}, "factor"), ({"rope_scaling": [1]}, "rope_scaling"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ({"max_position_embeddings": 0}, "max_position_embeddings"), ({"torch_dtype": "int8"}, "torch_dtype"),
    ({"bos_token_id": -1}, "bos_token_id"), ({"eos_token_id": [2, "x"]}, "eos_token_id"),
    ({"attention_bias": 1}, "attention_bias"), ({"model_type": "mistral", "sliding_window": 0}, "sliding_window"),
    ({"rope_parameters": 5}, "rope_parameters"),
])
def test_each_bad_field_is_a_format_error_naming_it(change, field):
    with pytest.raises(isthmus.FormatError, match=field) as e:
        LlamaConfig.from_dict({**BASE, **change})
    assert isinstance(e.value, isthmus.InvalidArgumentError)


def test_missing_fields_and_files(tmp_path):
    for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
        with pytest.raises(isthmus.FormatError, match=f"{name} is missing"):
            LlamaConfig.from_dict({k: v for k, v in BASE.items() if k != name})
    with pytest.raises(isthmus.FormatError, match="JSON object"):
        LlamaConfig.from_dict([1, 2])
    with pytest.raises(isthmus.FormatError, match="no config.json"):
        LlamaConfig.from_folder(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(isthmus.FormatError, match="not valid JSON"):
        LlamaConfig.from_folder(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(BASE))
    assert LlamaConfig.from_folder(tmp_path) == LlamaConfig.from_folder(tmp_path / "config.json")
