"""isthmus.llm.Tokenizer on a tokenizer.json built here with the `tokenizers` package itself, and
text generation end to end on a tiny random model with it."""
from __future__ import annotations

import json
import sys

import pytest

import isthmus
from isthmus.llm import GenerationConfig, LlamaModel, Tokenizer
from isthmus.llm.testing import write_random_llama

tokenizers = pytest.importorskip("tokenizers")

WORDS = ["hello", "world", "the", "cat", "sat", "on", "mat", "a", "dog"]
SPECIAL = ["<unk>", "<s>", "</s>", "<|eot_id|>", "<|start_header_id|>"]


def _write_tokenizer(folder, config: dict | None = None, post: bool = True):
    from tokenizers import Tokenizer as HF, models, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(SPECIAL + WORDS)}
    tok = HF(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(SPECIAL)
    if post:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    from tokenizers import decoders

    tok.decoder = decoders.WordPiece()  # joins words with spaces
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def test_encode_decode_and_special_tokens(tmp_path):
    cfg = {"bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": False}, "chat_template": "{{ x }}"}
    tok = Tokenizer.from_folder(_write_tokenizer(tmp_path, cfg))
    ids = tok.encode("hello the cat")
    assert ids == [1, 5, 7, 8]
    assert tok.encode("hello the cat", add_special_tokens=False) == [5, 7, 8]
    assert tok.decode(ids, skip_special_tokens=True) == "hello the cat"
    assert tok.decode(ids + [-1, -1], skip_special_tokens=True) == "hello the cat"
    # chat-template markers in the text are the special tokens themselves
    assert tok.encode("<|start_header_id|> dog <|eot_id|>", add_special_tokens=False) == [4, 13, 3]
    assert (tok.bos_token_id, tok.eos_token_id) == (1, 2)
    assert tok.stop_tokens() == (2, 3)
    assert tok.chat_template == "{{ x }}" and tok.vocab_size == len(SPECIAL + WORDS)
    with pytest.raises(isthmus.InvalidArgumentError, match="str"):
        tok.encode([1, 2])
    with pytest.raises(isthmus.InvalidArgumentError, match="integers"):
        tok.decode(["a"])


def test_add_bos_token_from_the_config(tmp_path):
    tok = Tokenizer.from_folder(_write_tokenizer(tmp_path, {"bos_token": "<s>", "add_bos_token": True}, post=False))
    assert tok.encode("cat sat") == [1, 8, 9]
    assert tok.encode("cat sat", add_special_tokens=False) == [8, 9]


def test_missing_and_bad_files_and_package(tmp_path, monkeypatch):
    with pytest.raises(isthmus.FormatError, match="no tokenizer.json"):
        Tokenizer.from_folder(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(isthmus.FormatError, match="tokenizer"):
        Tokenizer.from_folder(tmp_path)
    _write_tokenizer(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("[")
    with pytest.raises(isthmus.FormatError, match="tokenizer_config.json"):
        Tokenizer.from_folder(tmp_path)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(isthmus.InvalidArgumentError, match=r"pip install isthmus\[llm\]"):
        Tokenizer.from_folder(tmp_path)


def test_text_in_text_out(tmp_path):
    folder = write_random_llama(tmp_path / "m", dtype="float32", vocab_size=len(SPECIAL + WORDS) + 3, seed=4)
    _write_tokenizer(folder, {"bos_token": "<s>", "eos_token": "</s>"})
    tok = Tokenizer.from_folder(folder)
    with LlamaModel.load(folder, isthmus.device(), max_batch=2, max_context=32) as m:
        prompts = [tok.encode("the cat sat on"), tok.encode("hello")]
        r = m.generate(prompts, GenerationConfig(max_new_tokens=6, stop_tokens=tok.stop_tokens()))
    for ids in r.tokens:
        assert isinstance(tok.decode(ids), str) and 1 <= len(ids) <= 6


def test_special_tokens_declared_only_in_the_config_are_added(tmp_path):
    cfg = {"bos_token": "<s>", "added_tokens_decoder": {
        "14": {"content": "<|im_end|>", "special": True}, "3": {"content": "<|eot_id|>", "special": True},
        "15": {"content": "plain", "special": False}}}
    tok = Tokenizer.from_folder(_write_tokenizer(tmp_path, cfg))
    end = tok.token_id("<|im_end|>")
    assert end == len(SPECIAL + WORDS)  # the next id
    assert tok.encode("cat <|im_end|>", add_special_tokens=False) == [8, end]
    assert tok.token_id("plain") is None and end in tok.stop_tokens()
