"""isthmus.llm.LlamaModel against a NumPy float64 Llama (llm_reference.py) on tiny random checkpoints:
prompt logits within a tolerance fitted to the dtype, greedy tokens equal wherever the reference's
top two logits are farther apart than that tolerance, paged and contiguous caches, sampling,
stop tokens, the session API, every bad argument's error, and close() freeing the device memory."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import isthmus
from isthmus.llm import GenerationConfig, LlamaModel
from isthmus.llm.testing import write_random_llama
from llm_reference import Reference

DEVICES = [d.id for d in isthmus.devices()]
# logits tolerance, relative to the largest |logit| of the reference (measured on PoCL: f32 3.5e-7,
# f16 8e-4, bf16 6.3e-3 of it)
REL_TOL = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 2e-2}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}
# (dtype, write_random_llama arguments): odd sizes, GQA, tied and untied, both rope scalings, Qwen2 biases
CHECKPOINTS = {
    "f32-untied-mqa": ("float32", dict(hidden_size=72, num_attention_heads=3, num_key_value_heads=1,
                                       intermediate_size=200, vocab_size=517)),
    "bf16-tied-gqa-llama3": ("bfloat16", dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                              intermediate_size=96, vocab_size=389, tie_word_embeddings=True,
                                              rope_scaling=LLAMA3, rope_theta=500000.0)),
    "f16-linear-headdim": ("float16", dict(hidden_size=48, num_attention_heads=2, num_key_value_heads=2,
                                           head_dim=32, intermediate_size=112, vocab_size=301, num_hidden_layers=3,
                                           rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "f32-qwen2-bias": ("float32", dict(hidden_size=40, num_attention_heads=5, num_key_value_heads=1,
                                       intermediate_size=64, vocab_size=211, model_type="qwen2",
                                       attention_bias=True)),
}
PROMPT_LENGTHS = (41, 1, 11)
STEPS = 32


def _seed() -> int:
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"checkpoint seed {seed}")
    return seed


@pytest.fixture(scope="module", params=DEVICES or [pytest.param(None, marks=pytest.mark.skip(reason="no device"))])
def device(request):
    return isthmus.device(request.param)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    seed = _seed()
    return {name: write_random_llama(tmp_path_factory.mktemp(name), dtype=dt, seed=seed + i, **kw)
            for i, (name, (dt, kw)) in enumerate(CHECKPOINTS.items())}


@pytest.fixture(scope="module")
def bf16(device, folders):
    with LlamaModel.load(folders["bf16-tied-gqa-llama3"], device, max_batch=4, max_context=64) as m:
        yield m


def _prompts(rng, vocab: int, lengths=PROMPT_LENGTHS) -> list[list[int]]:
    return [rng.integers(0, vocab, n).tolist() for n in lengths]


def _check_against_reference(ref: Reference, prompts, result, dtype: str) -> None:
    """Prompt logits within the dtype's tolerance; each generated token the reference's argmax of
    the same sequence, or within the tolerance of it (the top two too close to call)."""
    close_calls = 0
    for i, p in enumerate(prompts):
        seq = list(p) + result.tokens[i]
        logits = ref.logits(seq)
        tol = REL_TOL[dtype] * np.abs(logits).max()
        got = result.last_logits[i]
        assert got.dtype == np.float32 and got.shape == (logits.shape[1],)
        err = np.abs(got - logits[len(p) - 1]).max()
        assert err <= tol, f"prompt {i}: logits off by {err} (tolerance {tol})"
        for s, t in enumerate(result.tokens[i]):
            row = logits[len(p) - 1 + s]
            best = row.max()
            assert row[t] >= best - tol, (f"prompt {i} step {s}: token {t} (logit {row[t]}) is not the greedy "
                                          f"{int(row.argmax())} ({best}); tolerance {tol}")
            close_calls += int(t != row.argmax())
    assert close_calls <= 2, f"{close_calls} tokens differ from the reference's argmax"


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_prompt_logits_and_greedy_tokens_match_the_reference(device, folders, name):
    dtype, _ = CHECKPOINTS[name]
    ref = Reference(folders[name])
    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, ref.c["vocab_size"])
    with LlamaModel.load(folders[name], device, max_batch=4, max_context=80) as m:
        assert m.dtype.name == dtype
        r = m.generate(prompts, GenerationConfig(max_new_tokens=STEPS), return_logits=True)
    assert [len(t) for t in r.tokens] == [STEPS] * len(prompts)
    _check_against_reference(ref, prompts, r, dtype)
    assert r.prompt_tokens_per_s > 0 and r.decode_tokens_per_s > 0


def test_decode_speed_leaves_out_the_step_graphs_capture(device, folders, monkeypatch):
    """A generation's decode tokens/s is the steps' time: the decode step's capture as a graph (once
    per model, batch and sampling mode; kernels built on first use) is set-up, counted apart."""
    from isthmus.llm.model import Decoder

    capture = Decoder._capture

    def slow(self, cfg):
        time.sleep(0.5)
        return capture(self, cfg)

    monkeypatch.setattr(Decoder, "_capture", slow)
    with LlamaModel.load(folders["f32-untied-mqa"], device, max_batch=2, max_context=32) as m:
        first = m.generate([[1, 2, 3]], GenerationConfig(max_new_tokens=3))
        again = m.generate([[4, 5]], GenerationConfig(max_new_tokens=3))  # the graph is the model's: no capture
    assert first.stats["graph_seconds"] >= 0.5 and first.stats["decode_seconds"] < 0.5
    assert again.stats["graph_seconds"] < 0.5 and again.stats["decode_seconds"] > 0
    assert first.decode_tokens_per_s == first.stats["decode_tokens"] / first.stats["decode_seconds"]


def test_host_seconds_count_the_steps_own_work_not_the_wait_for_the_tokens(device, folders, monkeypatch):
    """stats' host_seconds is step()'s time less its waits for the tokens (and the graph's capture):
    a readback made to take 50 ms per step lands in decode_seconds, not in host_seconds."""
    from isthmus.llm.model import Decoder

    download = Decoder.download

    def slow(self):
        time.sleep(0.05)
        return download(self)

    with LlamaModel.load(folders["f32-untied-mqa"], device, max_batch=2, max_context=32) as m:
        m.generate([[1, 2, 3]], GenerationConfig(max_new_tokens=3))  # the step's graph captured
        monkeypatch.setattr(Decoder, "download", slow)
        r = m.generate([[4, 5, 6], [7, 8]], GenerationConfig(max_new_tokens=6))
    st = r.stats
    assert st["host_steps"] == 5  # the decode steps: the first token is the prefill's
    assert st["decode_seconds"] >= 5 * 0.05
    assert 0 < st["host_seconds"] < 0.05 * st["host_steps"] / 2, st


def test_paged_and_contiguous_caches_give_the_same_tokens(device, folders, bf16):
    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, 389, (5, 13, 2))
    cfg = GenerationConfig(max_new_tokens=20)
    paged = bf16.generate(prompts, cfg, return_logits=True)
    with LlamaModel.load(folders["bf16-tied-gqa-llama3"], device, max_batch=3, max_context=40,
                         kv_cache="contiguous") as m:
        contiguous = m.generate(prompts, cfg, return_logits=True)
    with LlamaModel.load(folders["bf16-tied-gqa-llama3"], device, max_batch=3, max_context=40, page_size=3) as m:
        small_pages = m.generate(prompts, cfg)
    assert paged.tokens == contiguous.tokens == small_pages.tokens
    np.testing.assert_array_equal(paged.last_logits, contiguous.last_logits)


def test_a_sequence_gives_the_same_tokens_alone_and_in_a_batch(bf16):
    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, 389, (7, 3, 12, 1))
    together = bf16.generate(prompts, GenerationConfig(max_new_tokens=12)).tokens
    for i in (1, 2):
        assert bf16.generate([prompts[i]], GenerationConfig(max_new_tokens=12)).tokens == [together[i]]


def test_sampling_with_a_seed_is_reproducible(bf16):
    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, 389)
    cfg = GenerationConfig(max_new_tokens=16, temperature=1.5, top_k=50, top_p=0.95, seed=1234)
    a = bf16.generate(prompts, cfg).tokens
    b = bf16.generate(prompts, cfg).tokens
    other = bf16.generate(prompts, GenerationConfig(max_new_tokens=16, temperature=1.5, top_k=50, top_p=0.95,
                                                    seed=99)).tokens
    assert a == b
    assert a != other  # 48 draws from a flattened distribution
    # top_k = 1 keeps only the largest logit: the greedy tokens
    greedy = bf16.generate(prompts, GenerationConfig(max_new_tokens=16)).tokens
    assert bf16.generate(prompts, GenerationConfig(max_new_tokens=16, temperature=0.8, top_k=1, seed=5)).tokens \
        == greedy
    # temperature alone and top_p alone (other graphs), in range
    for cfg in (GenerationConfig(max_new_tokens=4, temperature=0.7, seed=3),
                GenerationConfig(max_new_tokens=4, temperature=1.0, top_p=0.5, seed=3)):
        toks = bf16.generate(prompts, cfg).tokens
        assert all(0 <= t < 389 for seq in toks for t in seq) and toks == bf16.generate(prompts, cfg).tokens


def test_stop_tokens_end_their_sequence_and_max_new_tokens_all(bf16):
    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, 389)
    free = bf16.generate(prompts, GenerationConfig(max_new_tokens=10)).tokens
    stop = free[0][3]
    cut = [seq[:seq.index(stop) + 1] if stop in seq else seq for seq in free]
    seen = []
    r = bf16.generate(prompts, GenerationConfig(max_new_tokens=10, stop_tokens=(stop,)),
                      on_token=lambda i, t: seen.append((i, t)))
    assert r.tokens == cut
    assert len(r.tokens[0]) <= 4 and r.tokens[0][-1] == stop
    assert sorted(seen) == sorted((i, t) for i, seq in enumerate(cut) for t in seq)
    # every sequence stopping ends the generation early
    everyone = {seq[0] for seq in free}
    r = bf16.generate(prompts, GenerationConfig(max_new_tokens=10, stop_tokens=tuple(everyone)))
    assert r.tokens == [[seq[0]] for seq in free]
    assert bf16.generate(prompts, GenerationConfig(max_new_tokens=1)).tokens == [[seq[0]] for seq in free]


def test_the_session_api(bf16):
    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, 389)
    free = bf16.generate(prompts, GenerationConfig(max_new_tokens=5), return_logits=True)
    stop = free.tokens[1][1]
    s = bf16.start(prompts, GenerationConfig(max_new_tokens=5, stop_tokens=[stop]))
    with pytest.raises(isthmus.InvalidArgumentError, match="open session"):
        bf16.start(prompts)
    steps = []
    while not s.done:
        steps.append(s.step())
    assert s.step() == []
    assert len(steps) == 5 and all(len(x) == 3 for x in steps)
    got = [[x[i] for x in steps] for i in range(3)]
    for i in range(3):
        want = free.tokens[i][:free.tokens[i].index(stop) + 1] if stop in free.tokens[i] else free.tokens[i]
        assert got[i][:len(want)] == want and all(t == -1 for t in got[i][len(want):])
    np.testing.assert_array_equal(s.last_logits(), free.last_logits)
    st = s.stats()
    assert st["prompt_tokens"] == sum(PROMPT_LENGTHS) and st["prompt_seconds"] > 0
    assert st["decode_tokens"] == sum(t >= 0 for x in steps[1:] for t in x) and st["decode_seconds"] > 0
    s.close()
    s.close()
    with pytest.raises(isthmus.InvalidArgumentError, match="closed"):
        s.step()
    with bf16.start(prompts, GenerationConfig(max_new_tokens=2)) as s2:  # closing let another start
        assert s2.step() == [t[0] for t in free.tokens]


@pytest.mark.parametrize("bad, match", [
    ([], "empty"), ([[]], r"prompts\[0\] is empty"), ("hello", "list of token-id lists"),
    (["hello"], "Tokenizer"), ([[1, 2, 389]], r"prompts\[0\]\[2\] = 389"), ([[1, -1]], "-1"),
    ([[1.5, 2]], "integer token ids"), ([[1]] * 5, "max_batch = 4"), ([list(range(60))], "max_context = 64"),
])
def test_bad_prompts_are_typed_errors(bf16, bad, match):
    with pytest.raises(isthmus.InvalidArgumentError, match=match):
        bf16.generate(bad, GenerationConfig(max_new_tokens=8))
    bf16.generate([[1]], GenerationConfig(max_new_tokens=1))  # nothing stays open


def test_bad_generate_arguments_are_typed_errors(bf16):
    with pytest.raises(isthmus.InvalidArgumentError, match="GenerationConfig"):
        bf16.generate([[1]], {"max_new_tokens": 3})
    with pytest.raises(isthmus.InvalidArgumentError, match="on_token"):
        bf16.generate([[1]], on_token=5)
    with pytest.raises(isthmus.InvalidArgumentError, match="return_logits"):
        bf16.generate([[1]], return_logits="yes")


@pytest.mark.parametrize("field, value, match", [
    ("max_new_tokens", 0, "max_new_tokens"), ("max_new_tokens", 2.5, "max_new_tokens"),
    ("temperature", -0.1, "temperature"), ("temperature", float("nan"), "temperature"),
    ("top_k", -1, "top_k"), ("top_k", 1025, "top_k"), ("top_p", 0.0, "top_p"), ("top_p", 1.5, "top_p"),
    ("seed", -1, "seed"), ("seed", 1 << 64, "seed"), ("stop_tokens", "2", "stop_tokens"),
    ("stop_tokens", (1, -2), "stop_tokens"), ("top_k", True, "top_k"),
])
def test_bad_generation_config_fields_are_typed_errors(field, value, match):
    with pytest.raises(isthmus.InvalidArgumentError, match=match):
        GenerationConfig(**{field: value})
    assert GenerationConfig(stop_tokens=7).stop_tokens == (7,)


def test_bad_load_arguments_and_checkpoints_are_typed_errors(device, folders, tmp_path):
    good = folders["f32-untied-mqa"]
    for kwargs, match in ((dict(kv_cache="ring"), "kv_cache"), (dict(max_batch=0), "max_batch"),
                          (dict(page_size=0), "page_size"), (dict(max_context=4096), "max_position_embeddings"),
                          (dict(max_context=1.5), "max_context")):
        with pytest.raises(isthmus.InvalidArgumentError, match=match):
            LlamaModel.load(good, device, **kwargs)
    with pytest.raises(isthmus.InvalidArgumentError, match="not a folder"):
        LlamaModel.load(tmp_path / "nothing", device)
    with pytest.raises(isthmus.FormatError, match="config.json"):
        LlamaModel.load(tmp_path, device)
    # a tensor missing, a shape the config does not give, an untied config without lm_head
    import json
    import shutil

    for change, match in ((dict(intermediate_size=201), "mlp.gate_proj.weight' has shape"),
                          (dict(num_hidden_layers=3), "model.layers.2.input_layernorm.weight"),
                          (dict(vocab_size=518), "model.embed_tokens.weight' has shape")):
        bad = tmp_path / f"bad{len(list(tmp_path.iterdir()))}"
        shutil.copytree(good, bad)
        cfg = json.loads((bad / "config.json").read_text())
        (bad / "config.json").write_text(json.dumps({**cfg, **change}))
        before = isthmus.live_buffers()
        with pytest.raises(isthmus.FormatError, match=match):
            LlamaModel.load(bad, device)
        assert isthmus.live_buffers() == before
    tied = write_random_llama(tmp_path / "tied", dtype="float32", tie_word_embeddings=True)
    cfg = json.loads((tied / "config.json").read_text())
    (tied / "config.json").write_text(json.dumps({**cfg, "tie_word_embeddings": False}))
    with pytest.raises(isthmus.FormatError, match="lm_head.weight.*tie_word_embeddings"):
        LlamaModel.load(tied, device)


def test_close_frees_every_buffer(device, folders):
    """A model's close frees all it allocated. The device keeps what ops cache for the next call
    (the calling thread's scratch, rope's frequency table: a few bytes, made on first use and
    bounded), so the first cycle may leave those, and a second cycle must leave nothing more."""
    def cycle():
        m = LlamaModel.load(folders["f32-untied-mqa"], device, max_batch=2, max_context=32)
        assert device.memory_in_use() > in_use
        m.generate([[1, 2, 3], [4]], GenerationConfig(max_new_tokens=3))
        m.generate([[5]], GenerationConfig(max_new_tokens=3, temperature=1.0, seed=2))
        s = m.start([[1, 2]], GenerationConfig(max_new_tokens=3))
        s.step()
        s.step()  # a step left pending
        m.close()
        assert s.closed and m.closed
        m.close()
        return m

    before, in_use = isthmus.live_buffers(), device.memory_in_use()
    cycle()
    assert isthmus.live_buffers() == before
    cached = device.memory_in_use() - in_use
    assert 0 <= cached <= 4096, f"{cached} bytes held by the device after close"
    in_use += cached
    m = cycle()
    assert isthmus.live_buffers() == before
    assert device.memory_in_use() == in_use
    with pytest.raises(isthmus.ClosedBufferError):
        m.generate([[1]])
    with pytest.raises(isthmus.ClosedBufferError):
        with m:
            pass


def test_fused_and_separate_gate_up_give_the_same_results(device, folders, monkeypatch):
    from isthmus.llm import weights

    rng = np.random.default_rng(_seed())
    prompts = _prompts(rng, 517)
    results = []
    for fuse in (True, False):
        monkeypatch.setattr(weights, "FUSE_GATE_UP", fuse)
        with LlamaModel.load(folders["f32-untied-mqa"], device, max_batch=3, max_context=64) as m:
            assert (m.weights.layers[0].gate_up is not None) == fuse
            results.append(m.generate(prompts, GenerationConfig(max_new_tokens=12), return_logits=True))
    assert results[0].tokens == results[1].tokens
    np.testing.assert_allclose(results[0].last_logits, results[1].last_logits, rtol=0, atol=1e-4)


def test_a_bfloat16_checkpoint_computed_in_float32(device, folders):
    """dtype= converts the weights as they load: bfloat16 values are exact in float32, so the model
    then matches the reference to float32's tolerance."""
    folder = folders["bf16-tied-gqa-llama3"]
    ref = Reference(folder)
    prompts = _prompts(np.random.default_rng(_seed()), 389, (9, 3))
    with LlamaModel.load(folder, device, dtype="float32", max_batch=2, max_context=32) as m:
        assert m.dtype.name == "float32" and m.weights.embed.dtype == np.float32
        r = m.generate(prompts, GenerationConfig(max_new_tokens=8), return_logits=True)
    _check_against_reference(ref, prompts, r, "float32")
    with pytest.raises(isthmus.InvalidArgumentError, match="int32"):
        LlamaModel.load(folder, device, dtype="int32")


def test_the_bf16_gemv_path_matches_the_reference_and_ops_gemm(device, folders, monkeypatch):
    """isthmus.llm.gemv (opencl/llm_gemv.cl) for the projections of steps with at most 8 rows: the
    same tokens as ops.gemm's, logits within bf16's tolerance of the reference."""
    from isthmus.llm import gemv

    folder = folders["bf16-tied-gqa-llama3"]
    ref = Reference(folder)
    prompts = _prompts(np.random.default_rng(_seed()), 389, (2, 1, 3))  # 6 rows: the prefill too
    results = []
    for on in (True, False):
        monkeypatch.setattr(gemv, "ENABLED", on)
        with LlamaModel.load(folder, device, max_batch=3, max_context=40) as m:
            results.append(m.generate(prompts, GenerationConfig(max_new_tokens=STEPS), return_logits=True))
            assert (len(m._gemv._kernels) > 0) == on
    _check_against_reference(ref, prompts, results[0], "bfloat16")
    assert results[0].tokens == results[1].tokens


def test_the_bf16_gemv_kernel(device, rng):
    import ml_dtypes

    from isthmus.llm import gemv

    g = gemv.Gemv(device)
    for m, n, k in ((1, 72, 64), (3, 517, 200), (8, 9, 8), (5, 1000, 136)):
        x = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
        w = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
        want = x.astype(np.float64) @ w.astype(np.float64).T
        gemv.ENABLED = True
        try:
            for f32 in (False, True):
                out = device.asarray(np.full((m, n), np.nan, np.float32 if f32 else ml_dtypes.bfloat16))
                g(device.asarray(x), device.asarray(w), out, out_f32=f32)
                got = out.to_numpy().astype(np.float64)
                tol = (1e-5 if f32 else 8e-3) * np.abs(want).max()
                np.testing.assert_allclose(got, want, rtol=0, atol=tol)
        finally:
            gemv.ENABLED = False
    g.close()
