"""io.isthmus.llm against Python's isthmus.llm on the same tiny random checkpoints: Java's
generations are Python's (tokens and last logits, greedy and sampled), and the command line
(``isthmus java -cp ARTIFACT io.isthmus.llm.Generate``) prints them in its format, dumps the
logits Python's model computes as a float32 (batch, vocab) .npy, and refuses bad model folders
with one line and a non-zero status. (Argument errors: java/.../llm/GenerateTest.java.)"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from isthmus import __version__

llm = pytest.importorskip("isthmus.llm")
from isthmus.llm.testing import write_random_llama  # noqa: E402

from .test_spi import crossings  # noqa: E402,F401 - the fixture counting Java -> Python calls

JAR = Path(__file__).resolve().parents[2] / "python" / "isthmus" / "java" / "lib" / f"isthmus-{__version__}.jar"


def _jpath(jvm, p) -> object:
    return jvm.JClass("java.nio.file.Path").of(str(p), [])


def _python_generate(folder, dev, prompts, **config):
    with llm.LlamaModel.load(folder, dev, max_batch=len(prompts), max_context=64) as m:
        return m.generate(prompts, llm.GenerationConfig(**config), return_logits=True)


@pytest.fixture
def model(tmp_path, rng):
    """A tiny bf16 model of odd sizes, untied, grouped-query attention."""
    return write_random_llama(tmp_path / "model", vocab_size=263, hidden_size=48, intermediate_size=76,
                              num_attention_heads=4, num_key_value_heads=2, seed=int(rng.integers(1 << 30)))


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.9, "top_k": 40, "top_p": 0.95, "seed": 11}],
                         ids=["greedy", "sampled"])
def test_java_generates_what_python_generates(jvm, J, dev, model, rng, sampling):
    prompts = [rng.integers(0, 263, n).tolist() for n in (5, 1, 12)]
    py = _python_generate(model, dev, prompts, max_new_tokens=7, **sampling)
    ll = jvm.JPackage("io.isthmus.llm")
    cfg = ll.GenerationConfig.builder().maxNewTokens(7).returnLogits(True)
    if sampling:
        cfg = cfg.temperature(0.9).topK(40).topP(0.95).seed(11)
    opts = ll.LlamaOptions.defaults().withMaxBatch(3).withMaxContext(64)
    jmodel = ll.LlamaModel.load(_jpath(jvm, model), J.Isthmus.get().device(dev.id), opts)
    try:
        jprompts = jvm.JClass("java.util.ArrayList")()
        for p in prompts:
            jprompts.add(jvm.JArray(jvm.JInt)(p))
        r = jmodel.generate(jprompts, cfg.build())
        assert [list(r.tokens(i)) for i in range(3)] == py.tokens
        logits = np.asarray(r.lastLogits(), np.float32).reshape(3, -1)
        np.testing.assert_allclose(logits, py.last_logits, rtol=1e-5, atol=1e-5)
    finally:
        jmodel.close()


def test_a_generation_crosses_once_per_step(jvm, J, dev, model, crossings):
    ll = jvm.JPackage("io.isthmus.llm")
    jmodel = ll.LlamaModel.load(_jpath(jvm, model), J.Isthmus.get().device(dev.id),
                                ll.LlamaOptions.defaults().withMaxBatch(2).withMaxContext(32))
    try:
        prompts = jvm.JClass("java.util.ArrayList")()
        for p in ([3, 1, 4], [1, 5, 9, 2, 6]):
            prompts.add(jvm.JArray(jvm.JInt)(p))
        crossings.clear()
        r = jmodel.generate(prompts, ll.GenerationConfig.builder().maxNewTokens(9).build())
        assert r.steps() == 9
        steps = crossings.pop("LlamaSessionHandle.step")
        assert steps == 10  # 9 tokens per sequence, then the empty step that says all are done
        crossings.pop("Runtime.startThreads", None)  # the model's generating thread, at its first generation
        assert crossings == {"LlamaHandle.start": 1, "LlamaSessionHandle.stats": 1, "LlamaSessionHandle.close": 1}
    finally:
        jmodel.close()


def _cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "isthmus.java", "-cp", str(JAR), "io.isthmus.llm.Generate", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not JAR.exists(), reason="the artifact is not built: make jar")
def test_the_command_line_prints_ids_per_prompt_and_dumps_pythons_logits(dev, model, rng, tmp_path):
    prompts = [rng.integers(0, 263, n).tolist() for n in (3, 9, 1)]
    batch = tmp_path / "batch.txt"
    batch.write_text("\n" + ",".join(map(str, prompts[2])) + "\n")
    npy = tmp_path / "logits.npy"
    r = _cli("--model", model, "--prompt-ids", ",".join(map(str, prompts[0])), "--prompt-ids",
             ",".join(map(str, prompts[1])), "--batch-file", batch, "--max-new-tokens", 5, "--device", dev.id,
             "--dump-logits", npy)
    assert r.returncode == 0, r.stderr
    py = _python_generate(model, dev, prompts, max_new_tokens=5)
    lines = r.stdout.splitlines()
    assert lines == [",".join(map(str, t)) for t in py.tokens]  # no tokenizer.json: ids only
    assert "tokens/s" in r.stderr and "prompt: 13 tokens" in r.stderr, r.stderr
    dumped = np.load(npy)
    assert dumped.dtype == np.float32 and dumped.shape == (3, 263)
    np.testing.assert_allclose(dumped, py.last_logits, rtol=1e-5, atol=1e-5)
    ref = _numpy_reference(model)
    for row, p in zip(dumped, prompts):  # and the NumPy float64 model, within bf16's error
        np.testing.assert_allclose(row, ref.logits(p)[-1], rtol=0.02, atol=0.15)


def _numpy_reference(folder):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
    from llm_reference import Reference  # tests/llm's, written from the Hugging Face definitions

    return Reference(folder)


@pytest.mark.skipif(not JAR.exists(), reason="the artifact is not built: make jar")
def test_the_command_line_samples_like_python_when_asked(dev, model, rng):
    prompts = [rng.integers(0, 263, n).tolist() for n in (4, 2)]
    args = ["--model", model, "--max-new-tokens", 6, "--device", dev.id, "--temperature", 1.3, "--top-k", 50, "--seed", 5]
    for p in prompts:
        args += ["--prompt-ids", ",".join(map(str, p))]
    r = _cli(*args)
    assert r.returncode == 0, r.stderr
    py = _python_generate(model, dev, prompts, max_new_tokens=6, temperature=1.3, top_k=50, seed=5)
    assert r.stdout.splitlines() == [",".join(map(str, t)) for t in py.tokens]


@pytest.mark.skipif(not JAR.exists(), reason="the artifact is not built: make jar")
def test_bad_model_folders_and_token_ids_exit_nonzero_with_one_line(model, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    gelu = tmp_path / "gelu"
    gelu.mkdir()
    config = json.loads((model / "config.json").read_text())
    (gelu / "config.json").write_text(json.dumps({**config, "hidden_act": "gelu"}))
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "config.json").write_text((model / "config.json").read_text())
    data = (model / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[: len(data) // 2])
    for folder, ids, status, expected in [(tmp_path / "absent", "1,2", 2, "is not a folder"),
                                          (empty, "1,2", 1, "no config.json"), (gelu, "1,2", 1, "hidden_act"),
                                          (cut, "1,2", 1, "FormatException"),
                                          (model, "1,263", 2, "prompt 1 holds token id 263, outside the model's")]:
        r = _cli("--model", folder, "--prompt-ids", ids)
        assert r.returncode == status, (folder, r.stdout, r.stderr)
        assert r.stdout == ""
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("Generate: ") and expected in err[0], r.stderr


def _word_tokenizer(folder: Path, vocab: int) -> None:
    """A word-level tokenizer.json for ``folder``'s vocabulary: "<s>" (0, added first), "</s>" (1, the
    end token), "w2".."wN"; and a tokenizer_config.json naming them."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, processors

    words = {"<s>": 0, "</s>": 1, **{f"w{i}": i for i in range(2, vocab)}}
    tok = tokenizers.Tokenizer(models.WordLevel(words, unk_token="<s>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(["<s>", "</s>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))


@pytest.mark.skipif(not JAR.exists(), reason="the artifact is not built: make jar")
def test_text_prompts_go_through_the_tokenizer_and_come_back_as_text(dev, model):
    _word_tokenizer(model, 263)
    tok = llm.Tokenizer.from_folder(model)
    prompts = [tok.encode("w5 w9 w33 w100"), [0, 7]]
    assert prompts[0] == [0, 5, 9, 33, 100]
    r = _cli("--model", model, "--prompt", "w5 w9 w33 w100", "--prompt-ids", "0,7", "--max-new-tokens", 12,
             "--device", dev.id)
    assert r.returncode == 0, r.stderr
    py = _python_generate(model, dev, prompts, max_new_tokens=12, stop_tokens=(1,))  # the tokenizer's end token
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    for line, tokens in zip(lines, py.tokens):
        ids, text = line.split("\t")
        assert ids == ",".join(map(str, tokens))
        assert text == tok.decode(tokens, skip_special_tokens=True).replace("\n", "\\n")
        assert 1 not in tokens[:-1]  # a sequence ends at its first end token


def test_java_tokenizer_is_pythons(jvm, J, model):
    _word_tokenizer(model, 263)
    py = llm.Tokenizer.from_folder(model)
    tok = jvm.JPackage("io.isthmus.llm").Tokenizer.load(_jpath(jvm, model))
    assert list(tok.encode("w3 w4 w262")) == py.encode("w3 w4 w262") == [0, 3, 4, 262]
    assert list(tok.encode("w3", False)) == [3]
    assert str(tok.decode(jvm.JArray(jvm.JInt)([0, 3, 4, 1]))) == "w3 w4"
    assert str(tok.decode(jvm.JArray(jvm.JInt)([0, 3]), False)) == "<s> w3"
    assert list(tok.stopTokens()) == [1]


def test_java_chat_template_is_pythons(jvm, J, model):
    """io.isthmus.llm.Tokenizer.applyChatTemplate / encodeChat: the Python template's text and ids, one
    crossing, typed Java errors."""
    _word_tokenizer(model, 263)
    cfg = json.loads((model / "tokenizer_config.json").read_text())
    cfg["chat_template"] = ("{% for m in messages %}{% if loop.first %}{{ bos_token }}{% endif %}"
                            "{% if m['role'] == 'user' %}w4 {% else %}w3 {% endif %}{{ m['content'] + ' ' + eos_token + ' ' }}"
                            "{% endfor %}"
                            "{% if add_generation_prompt %}{{ 'w5' }}{% endif %}")
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    py = llm.Tokenizer.from_folder(model)
    tok = jvm.JPackage("io.isthmus.llm").Tokenizer.load(_jpath(jvm, model))
    rng = np.random.default_rng()
    words = [" ".join(f"w{i}" for i in rng.integers(2, 263, 3)) for _ in range(3)]
    roles = ["system", "user", "assistant"]
    msgs = [{"role": r, "content": c} for r, c in zip(roles, words)]
    JMap, JList = jvm.JClass("java.util.Map"), jvm.JClass("java.util.ArrayList")
    jmsgs = JList()
    for r, c in zip(roles, words):
        jmsgs.add(JMap.of("role", r, "content", c))
    want = py.apply_chat_template(msgs)
    assert want.startswith("<s>") and want.endswith("w5")
    assert str(tok.applyChatTemplate(jmsgs)) == want
    assert str(tok.applyChatTemplate(jmsgs, False)) == py.apply_chat_template(msgs, add_generation_prompt=False)
    ids = list(tok.encodeChat(jmsgs))
    assert ids == py.apply_chat_template(msgs, tokenize=True) == py.encode(want, add_special_tokens=False)
    assert ids.count(0) == 1  # one BOS: the template's
    exc = jvm.JPackage("io.isthmus")
    with pytest.raises(exc.InvalidArgumentException, match=r"messages\[1\]"):
        bad = JList()
        bad.add(JMap.of("role", "user", "content", "w3"))
        bad.add(JMap.of("role", "user"))
        tok.applyChatTemplate(bad)
    cfg.pop("chat_template")
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    plain = jvm.JPackage("io.isthmus.llm").Tokenizer.load(_jpath(jvm, model))
    with pytest.raises(exc.InvalidArgumentException, match="no chat template"):
        plain.encodeChat(jmsgs)


@pytest.mark.skipif(not JAR.exists(), reason="the artifact is not built: make jar")
def test_the_command_line_chat_flag_renders_each_prompt_as_a_user_message(dev, model):
    _word_tokenizer(model, 263)
    cfg = json.loads((model / "tokenizer_config.json").read_text())
    cfg["chat_template"] = ("{{ bos_token }}{% for m in messages %}{{ 'w7 ' + m['content'] + ' w8 ' }}{% endfor %}"
                            "{% if add_generation_prompt %}{{ 'w9' }}{% endif %}")
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    tok = llm.Tokenizer.from_folder(model)
    want = tok.apply_chat_template([{"role": "user", "content": "w5 w33"}], tokenize=True)
    assert want == [0, 7, 5, 33, 8, 9]
    r = _cli("--model", model, "--prompt", "w5 w33", "--chat", "--max-new-tokens", 6, "--device", dev.id)
    assert r.returncode == 0, r.stderr
    py = _python_generate(model, dev, [want, tok.encode("w5 w33")], max_new_tokens=6, stop_tokens=(1,))
    assert r.stdout.splitlines()[0].split("\t")[0] == ",".join(map(str, py.tokens[0]))
    plain = _cli("--model", model, "--prompt", "w5 w33", "--max-new-tokens", 6, "--device", dev.id)  # no flag: as before
    assert plain.stdout.splitlines()[0].split("\t")[0] == ",".join(map(str, py.tokens[1]))
    cfg.pop("chat_template")
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    r = _cli("--model", model, "--prompt", "w5", "--chat", "--device", dev.id)
    assert r.returncode == 1 and "no chat template" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
