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


# ---- chat templates: real templates of Hugging Face model folders, verbatim -----------------------
# Meta-Llama-3-8B-Instruct's tokenizer_config.json chat_template
LLAMA3 = ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
          "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
          "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
          "{{ content }}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
# Qwen2-Instruct's (ChatML, with its default system message)
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
          "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
CHAT_SPECIAL = ["<|end_header_id|>", "<|im_start|>", "<|im_end|>"]


def _chat_tokenizer(folder, template, **config):
    added = {str(100 + i): {"content": t, "special": True} for i, t in enumerate(CHAT_SPECIAL)}
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": template, "added_tokens_decoder": added}
    cfg.update(config)
    return Tokenizer.from_folder(_write_tokenizer(folder, cfg))


def _conversation(rng):
    w = lambda n: " ".join(rng.choice(WORDS, n))  # noqa: E731
    return [{"role": "system", "content": w(3)}, {"role": "user", "content": w(4)},
            {"role": "assistant", "content": w(2)}, {"role": "user", "content": w(5)}]


def test_llama3_template_renders_as_transformers(tmp_path):
    import numpy as np

    msgs = _conversation(np.random.default_rng())
    tok = _chat_tokenizer(tmp_path, LLAMA3)
    body = "".join(f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content']}<|eot_id|>" for m in msgs)
    assert tok.apply_chat_template(msgs, add_generation_prompt=False) == "<s>" + body
    want = "<s>" + body + "<|start_header_id|>assistant<|end_header_id|>\n\n"
    assert tok.apply_chat_template(msgs) == want
    assert tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False) == want
    # the template's `| trim` of contents
    padded = [{"role": "user", "content": "  cat sat \n"}]
    assert tok.apply_chat_template(padded, add_generation_prompt=False) == \
        "<s><|start_header_id|>user<|end_header_id|>\n\ncat sat<|eot_id|>"
    ids = tok.apply_chat_template(msgs, tokenize=True)
    assert ids == tok.encode(want, add_special_tokens=False)
    assert ids.count(tok.bos_token_id) == 1 and ids[0] == tok.bos_token_id  # the template's BOS, not a second
    assert ids[-3:] == [tok.token_id("<|start_header_id|>"), tok.token_id("<unk>"), tok.token_id("<|end_header_id|>")]


def test_chatml_template_renders_as_transformers(tmp_path):
    import numpy as np

    msgs = _conversation(np.random.default_rng())
    tok = _chat_tokenizer(tmp_path, CHATML)
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs)
    assert tok.apply_chat_template(msgs, add_generation_prompt=False) == body
    assert tok.apply_chat_template(msgs) == body + "<|im_start|>assistant\n"
    # no system message: the template's default one
    assert tok.apply_chat_template(msgs[1:2]) == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                                  f"<|im_start|>user\n{msgs[1]['content']}<|im_end|>\n"
                                                  "<|im_start|>assistant\n")
    ids = tok.apply_chat_template(msgs, tokenize=True)
    assert ids == tok.encode(body + "<|im_start|>assistant\n", add_special_tokens=False)
    assert tok.bos_token_id not in ids  # ChatML writes no BOS, and none is added
    assert ids.count(tok.token_id("<|im_start|>")) == 5


def test_template_extras_globals_and_tojson(tmp_path):
    tpl = ("{{ bos_token }}|{{ eos_token }}|{{ date_string }}|{{ tools is none }}|{{ messages | tojson }}|"
           "{{ {'a': [1, 2]} | tojson(indent=2) }}|{{ strftime_now('%Y') }}")
    tok = _chat_tokenizer(tmp_path, tpl)
    import datetime

    out = tok.apply_chat_template([{"role": "user", "content": "été <b>&"}], date_string="26 Jul 2024")
    year = str(datetime.datetime.now().year)
    assert out == ('<s>|</s>|26 Jul 2024|True|[{"role": "user", "content": "été <b>&"}]|'
                   '{\n  "a": [\n    1,\n    2\n  ]\n}|' + year)


def test_generation_tags_and_loop_controls_as_transformers(tmp_path):
    tpl = ("{% for m in messages %}{% if m['role'] == 'system' %}{% continue %}{% endif %}"
           "{% if m['role'] == 'assistant' %}{% generation %}[{{ m['content'] }}]{% endgeneration %}"
           "{% else %}{{ m['content'] }};{% endif %}{% endfor %}")
    tok = _chat_tokenizer(tmp_path, tpl)
    msgs = [{"role": "system", "content": "x"}, {"role": "user", "content": "cat"},
            {"role": "assistant", "content": "dog"}, {"role": "user", "content": "mat"}]
    assert tok.apply_chat_template(msgs) == "cat;[dog]mat;"


def test_chat_template_errors(tmp_path, monkeypatch):
    msgs = [{"role": "user", "content": "cat"}]
    tok = Tokenizer.from_folder(_write_tokenizer(tmp_path / "none", {"bos_token": "<s>"}))
    with pytest.raises(isthmus.InvalidArgumentError, match="no chat template.*plain text or token ids"):
        tok.apply_chat_template(msgs)
    tok = _chat_tokenizer(tmp_path / "llama", LLAMA3)
    for bad, where in (([{"role": "user"}], r"messages\[0\]"), ([msgs[0], {"role": 1, "content": "x"}], r"messages\[1\]"),
                       ([msgs[0], msgs[0], "cat"], r"messages\[2\]"), ("cat", "list")):
        with pytest.raises(isthmus.InvalidArgumentError, match=where):
            tok.apply_chat_template(bad)
    strict = _chat_tokenizer(tmp_path / "strict", "{% if messages[0]['role'] != 'system' %}"
                             "{{ raise_exception('Conversations must start with a system message') }}{% endif %}ok")
    with pytest.raises(isthmus.InvalidArgumentError, match="must start with a system message"):
        strict.apply_chat_template(msgs)
    assert strict.apply_chat_template([{"role": "system", "content": "x"}]) == "ok"
    broken = _chat_tokenizer(tmp_path / "broken", "{% for m in messages %}{{ m.content }")
    with pytest.raises(isthmus.FormatError, match="tokenizer_config.json"):
        broken.apply_chat_template(msgs)
    monkeypatch.setitem(sys.modules, "jinja2", None)
    fresh = _chat_tokenizer(tmp_path / "nojinja", LLAMA3)
    with pytest.raises(isthmus.InvalidArgumentError, match=r"jinja2.*pip install isthmus\[llm\]"):
        fresh.apply_chat_template(msgs)
