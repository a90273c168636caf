"""The PyTorch peers of benchmarks/llama.py, on the weights of a transformers ``LlamaForCausalLM``
loaded from the same Hugging Face folder isthmus loads:

- :class:`TorchLlama`: a minimal Llama in PyTorch (cuBLAS matmuls, a static KV cache of
  ``(layers, batch, kv_heads, length, head_dim)``; q/k/v and gate/up fused into one matmul each; SDPA
  for the prefill, grouped-query decode attention as two batched matmuls), the usual hand-written
  baseline (gpt-fast's shape). Its decode step runs eagerly, as one CUDA graph per
  step, or through ``torch.compile(mode="reduce-overhead")``; its prefill is SDPA + cuBLAS;
- :func:`hf_generate_decode`: ``transformers``' own ``generate`` with ``cache_implementation="static"``.

Every sequence of a batch has the same length here (the benchmark's prompts do), so one position
vector serves the batch.
"""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F


def load_hf(folder, device: str = "cuda", dtype=torch.bfloat16):
    from transformers import LlamaForCausalLM

    try:  # straight onto the device (accelerate's loader), else through host memory
        model = LlamaForCausalLM.from_pretrained(str(folder), dtype=dtype, attn_implementation="sdpa",
                                                 device_map=device)
    except (ImportError, ValueError):
        model = LlamaForCausalLM.from_pretrained(str(folder), dtype=dtype, attn_implementation="sdpa")
    return model.to(device).eval()


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


class TorchLlama:
    """A minimal Llama (the reference's arithmetic: RMSNorm in f32, rotate-half rope with the HF
    model's own ``inv_freq``) on a ``LlamaForCausalLM``'s parameters."""

    def __init__(self, hf):
        m, c = hf.model, hf.config
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.eps = c.rms_norm_eps
        self.embed = m.embed_tokens.weight
        self.layers = []
        with torch.no_grad():
            for layer in m.layers:
                a, mlp = layer.self_attn, layer.mlp
                self.layers.append((layer.input_layernorm.weight,
                                    torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]),
                                    a.o_proj.weight, layer.post_attention_layernorm.weight,
                                    torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]), mlp.down_proj.weight))
        self.norm = m.norm.weight
        self.head = hf.lm_head.weight
        self.inv_freq = m.rotary_emb.inv_freq.float()
        self.rope_scale = float(getattr(m.rotary_emb, "attention_scaling", 1.0))
        self.device = self.embed.device

    def cache(self, batch: int, length: int):
        shape = (len(self.layers), batch, self.kv_heads, length, self.head_dim)
        return (torch.zeros(shape, dtype=self.embed.dtype, device=self.device),
                torch.zeros(shape, dtype=self.embed.dtype, device=self.device))

    def _rms(self, x, w):
        xf = x.float()
        return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)

    def _rope(self, x, pos):  # x (B, h, T, d), pos (B, T)
        freqs = pos[..., None].float() * self.inv_freq  # (B, T, d/2)
        emb = torch.cat([freqs, freqs], -1)[:, None]
        cos, sin = (emb.cos() * self.rope_scale).to(x.dtype), (emb.sin() * self.rope_scale).to(x.dtype)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(self, tokens, pos, cache):
        """Logits (float32) at the last position of each sequence; ``tokens``/``pos`` (B, T): T > 1 is
        a prefill from position 0, T == 1 a decode step at ``pos``."""
        keys, values = cache
        b, t = tokens.shape
        h, kvh, d = self.heads, self.kv_heads, self.head_dim
        x = F.embedding(tokens, self.embed)
        at = pos[0]
        if t == 1:
            length = keys.shape[3]
            mask = (torch.arange(length, device=tokens.device) <= pos[:, :1])[:, None, None, :]  # (B, 1, 1, L)
        for i, (w_in, w_qkv, w_o, w_post, w_gu, w_down) in enumerate(self.layers):
            y = self._rms(x, w_in) @ w_qkv.T
            q, k, v = y.split([h * d, kvh * d, kvh * d], -1)
            q = self._rope(q.view(b, t, h, d).transpose(1, 2), pos)
            k = self._rope(k.view(b, t, kvh, d).transpose(1, 2), pos)
            v = v.view(b, t, kvh, d).transpose(1, 2)
            keys[i].index_copy_(2, at, k)
            values[i].index_copy_(2, at, v)
            if t > 1:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:  # grouped-query attention as two batched matmuls over each kv head's queries (no K/V copies)
                s = (q.view(b, kvh, h // kvh, d) @ keys[i].transpose(-1, -2)).float() * d ** -0.5
                p = s.masked_fill(~mask, float("-inf")).softmax(-1).to(q.dtype)
                o = (p @ values[i]).view(b, h, 1, d)
            x = x + o.transpose(1, 2).reshape(b, t, h * d) @ w_o.T
            g, u = (self._rms(x, w_post) @ w_gu.T).chunk(2, -1)
            x = x + (F.silu(g) * u) @ w_down.T
        return (self._rms(x[:, -1], self.norm) @ self.head.T).float()

    # ---- the peers --------------------------------------------------------------------------------
    def prefill_seconds(self, prompt, repeat: int = 3) -> float:
        """Best wall time of a prefill of ``prompt`` (B, T) (logits of the last position only)."""
        b, t = prompt.shape
        cache = self.cache(b, t)
        pos = torch.arange(t, device=self.device).expand(b, t)
        best = float("inf")
        with torch.no_grad():
            for _ in range(repeat + 1):
                _sync(self.device)
                t0 = time.perf_counter()
                self.forward(prompt, pos, cache)
                _sync(self.device)
                best = min(best, time.perf_counter() - t0)
        del cache
        return best

    def _decode_setup(self, batch: int, context: int, steps: int):
        cache = self.cache(batch, context + steps + 8)
        tok = torch.zeros((batch, 1), dtype=torch.long, device=self.device)
        pos = torch.full((batch, 1), context, dtype=torch.long, device=self.device)
        return cache, tok, pos

    def decode_eager(self, batch: int, context: int, steps: int) -> float:
        """Tokens/s of ``steps`` eager greedy steps at ``context`` (the cache's earlier positions are
        zeros: attention reads them all the same)."""
        cache, tok, pos = self._decode_setup(batch, context, steps + 2)
        with torch.no_grad():
            for _ in range(2):
                tok = self.forward(tok, pos, cache).argmax(-1, keepdim=True)
                pos += 1
            _sync(self.device)
            t0 = time.perf_counter()
            for _ in range(steps):
                tok = self.forward(tok, pos, cache).argmax(-1, keepdim=True)
                pos += 1
            _sync(self.device)
        return batch * steps / (time.perf_counter() - t0)

    def decode_graph(self, batch: int, context: int, steps: int) -> float:
        """Tokens/s with the step captured once as a CUDA graph and replayed (the position advances
        inside the graph)."""
        cache, tok, pos = self._decode_setup(batch, context, steps + 4)

        def step():
            tok.copy_(self.forward(tok, pos, cache).argmax(-1, keepdim=True))
            pos.add_(1)

        with torch.no_grad():
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            graph.replay()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                graph.replay()
            torch.cuda.synchronize()
            rate = batch * steps / (time.perf_counter() - t0)
        del graph
        return rate

    def decode_compiled(self, batch: int, context: int, steps: int) -> tuple[float, float]:
        """(tokens/s, compile seconds) of the step through ``torch.compile(mode="reduce-overhead")``
        (CUDA graphs by Inductor), the KV cache marked as static addresses as transformers does."""
        cache, tok, pos = self._decode_setup(batch, context, steps + 4)
        for c in cache:
            torch._dynamo.mark_static_address(c)

        def step(tok, pos):
            return self.forward(tok, pos, cache).argmax(-1, keepdim=True)

        compiled = torch.compile(step, mode="reduce-overhead", fullgraph=True)
        with torch.no_grad():
            t0 = time.perf_counter()
            for _ in range(3):
                tok = compiled(tok, pos).clone()
                pos += 1
            _sync(self.device)
            compile_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            for _ in range(steps):
                tok = compiled(tok, pos).clone()
                pos += 1
            _sync(self.device)
        return batch * steps / (time.perf_counter() - t0), compile_s


def hf_generate_decode(hf, batch: int, context: int, steps: int, auto_compile: bool = False) -> float:
    """Decode tokens/s of ``transformers``' ``generate`` (greedy, static cache): the time of
    ``steps + 1`` new tokens less that of 1 (the prefill), over ``steps``. ``auto_compile=False``
    passes ``disable_compile=True`` (transformers would otherwise compile the forward for a static cache)."""
    ids = torch.randint(0, hf.config.vocab_size, (batch, context), device=hf.device)
    mask = torch.ones_like(ids)
    kw = dict(do_sample=False, cache_implementation="static", pad_token_id=0, attention_mask=mask)
    if not auto_compile:
        kw["disable_compile"] = True

    def run(n):
        _sync(hf.device)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = hf.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
        _sync(hf.device)
        assert out.shape[1] == context + n, out.shape
        return time.perf_counter() - t0

    run(2)  # warm-up (and the compile, when transformers compiles)
    one, many = run(1), run(steps + 1)
    return batch * steps / max(many - one, 1e-9)


def copy_bandwidth(device: str = "cuda", nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth (bytes read + written per second)."""
    a = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    b = torch.empty_like(a)
    b.copy_(a)
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(10):
        b.copy_(a)
    _sync(device)
    return 2 * nbytes * 10 / (time.perf_counter() - t0)


def host_to_device_bandwidth(nbytes: int = 1 << 30) -> float:
    """Pinned host to device copy bandwidth (bytes per second)."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    return nbytes * 5 / (time.perf_counter() - t0)


def write_random_llama_fast(folder, preset: dict, seed: int = 0, device: str = "cuda"):
    """``isthmus.llm.testing.write_random_llama(folder, dtype="bfloat16", **preset)``'s folder (the same
    config.json fields, tensor names and scales) with the random numbers drawn by torch on ``device``:
    the 16 GB of the 8B shapes in seconds rather than a minute of NumPy. Returns the folder."""
    import json
    from pathlib import Path

    from isthmus.llm.testing import _tensors  # (name, shape, kind, scale) of every tensor: the one spec

    c = {"vocab_size": 517, "hidden_size": 72, "intermediate_size": 200, "num_hidden_layers": 2,
         "num_attention_heads": 3, "num_key_value_heads": 1, "rope_theta": 10000.0, "rope_scaling": None,
         "tie_word_embeddings": False, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, **preset}
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **c, "head_dim": head_dim,
              "hidden_act": "silu", "torch_dtype": "bfloat16", "attention_bias": False, "mlp_bias": False,
              "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True}
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    specs = _tensors(config, head_dim)
    header, offset = {}, 0
    for name, shape, _, _ in specs:
        n = 2 * int(torch.Size(shape).numel())
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    gen = torch.Generator(device=device).manual_seed(seed)
    tmp = out / "model.safetensors.tmp"
    with open(tmp, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for _, shape, kind, scale in specs:
            t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32).mul_(scale)
            if kind == "norm":
                t.add_(1.0)
            f.write(t.to(torch.bfloat16).view(torch.int16).cpu().numpy().data)
            del t
    tmp.replace(out / "model.safetensors")
    return out
