"""LlamaModel: a Llama-family checkpoint on one device, its forward on isthmus ops.

The prefill runs every prompt of a batch at once as packed rows (variable-length attention), writes
their keys and values into the KV cache and takes the logits of each prompt's last position. A
decode step (one token per sequence) is captured once per batch size and sampling mode as a graph
(:class:`Decoder`) and replayed: the positions, cache lengths and sampling offsets it reads live
in device buffers that the graph's last kernel advances, so a step is one replay plus the readback
of the sampled tokens.
"""
from __future__ import annotations

import functools
import threading
from pathlib import Path

import numpy as np

from .. import ops
from ..buffer import Buffer
from ..device import Device, device as _device
from .. import knobs
from ..errors import ClosedBufferError, InvalidArgumentError
from ..launch import LaunchConfig
from .cache import KVCache
from .config import LlamaConfig
from .gemv import Gemv
from .generation import GenerationConfig, GenerationResult
from .rows import Rows
from .session import Session
from .weights import Weights

_F32 = np.float32


class LlamaModel:
    """A Llama-family model (Llama, Mistral, Qwen2 layouts) loaded from a Hugging Face folder.

    >>> with LlamaModel.load("Llama-3.2-1B/", isthmus.device()) as model:
    ...     result = model.generate([[128000, 791, 6864]], GenerationConfig(max_new_tokens=16))
    ...     result.tokens
    """

    def __init__(self, dev: Device, cfg: LlamaConfig, weights: Weights, cache: KVCache):
        self.device, self.config, self.weights, self.cache = dev, cfg, weights, cache
        self.dtype = weights.dtype
        self._decoders: dict = {}  # batch size -> Decoder
        self._gemv = Gemv(dev)  # x @ W.T
        self._advance = None  # the step-bookkeeping kernel (compiled on first use)
        self._session = None  # the open session (one at a time: they share the decoders' buffers)
        self._lock = threading.Lock()
        self._closed = False

    # ---- loading -------------------------------------------------------------------------------
    @classmethod
    def load(cls, path, device=None, *, dtype=None, max_batch: int = 32, max_context: int | None = None,
             kv_cache: str = "paged", page_size: int = 16) -> "LlamaModel":
        """Load the model folder ``path`` (config.json + safetensors) onto ``device`` (a Device or an
        id; None: the default device). ``dtype``: what the model computes in (default: the
        checkpoint's); ``max_batch`` prompts at most per generate call; ``max_context`` tokens at most
        per sequence, prompt and new tokens (default: the config's max_position_embeddings, at most
        4096); ``kv_cache``: "paged" (``page_size`` keys a page) or "contiguous"."""
        dev = device if isinstance(device, Device) else _device(device)
        p = Path(path)
        if not p.is_dir():
            raise InvalidArgumentError(f"LlamaModel.load: {path} is not a folder (a Hugging Face model folder with "
                                       f"config.json and model.safetensors)")
        cfg = LlamaConfig.from_folder(p)
        if kv_cache not in ("paged", "contiguous"):
            raise InvalidArgumentError(f"LlamaModel.load: kv_cache must be 'paged' or 'contiguous', got {kv_cache!r}")
        max_batch = _positive("max_batch", max_batch, 1 << 16)
        page_size = _positive("page_size", page_size, 1 << 16)
        limit = cfg.max_position_embeddings
        if cfg.sliding_window is not None:  # (decode attention has no window: contexts stay within it)
            limit = min(limit, cfg.sliding_window)
        if max_context is None:
            max_context = min(limit, 4096)
        max_context = _positive("max_context", max_context, 1 << 30)
        if max_context > limit:
            what = "sliding_window" if limit != cfg.max_position_embeddings else "max_position_embeddings"
            raise InvalidArgumentError(f"LlamaModel.load: max_context = {max_context} exceeds the config's {what} "
                                       f"({limit})")
        weights = Weights(dev, p, cfg, dtype)
        try:
            cache = KVCache(dev, cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim, weights.dtype.np,
                            paged=kv_cache == "paged", max_batch=max_batch, max_context=max_context,
                            page_size=page_size)
        except Exception:
            weights.close()
            raise
        return cls(dev, cfg, weights, cache)

    @property
    def max_batch(self) -> int:
        return self.cache.max_batch

    @property
    def max_context(self) -> int:
        return self.cache.max_context

    # ---- generation ----------------------------------------------------------------------------
    def start(self, prompts, config: GenerationConfig | None = None, return_logits: bool = False):
        """Prefill ``prompts`` (lists of token ids, any lengths) and return a :class:`Session` whose
        ``step()`` yields a token per sequence. One session at a time per model."""
        self._check_open()
        with self._lock:
            if self._session is not None and not self._session.closed:
                raise InvalidArgumentError("this model already has an open session; close it (session.close()) "
                                           "before starting another")
            s = Session(self, prompts, config if config is not None else GenerationConfig(), return_logits)
            self._session = s
        return s

    def generate(self, prompts, config: GenerationConfig | None = None, on_token=None,
                 return_logits: bool = False) -> GenerationResult:
        """Generate for a batch of prompts (lists of token ids, different lengths). ``on_token(seq_index,
        token_id)`` is called for each generated token as it comes. Returns a GenerationResult.

        >>> r = model.generate([[1, 2, 3], [4, 5]], GenerationConfig(max_new_tokens=8))
        >>> r.tokens        # 8 ids per prompt (fewer where a stop token came)
        """
        if on_token is not None and not callable(on_token):
            raise InvalidArgumentError(f"generate: on_token must be a callable (seq_index, token_id), got "
                                       f"{type(on_token).__name__}")
        s = self.start(prompts, config, return_logits)
        try:
            out: list[list[int]] = [[] for _ in range(s.batch)]
            while True:
                step = s.step()
                if not step:
                    break
                for i, t in enumerate(step):
                    if t >= 0:
                        out[i].append(t)
                        if on_token is not None:
                            on_token(i, t)
            st = s.stats()
            return GenerationResult(
                tokens=out, last_logits=s.last_logits() if return_logits else None,
                prompt_tokens_per_s=st["prompt_tokens"] / st["prompt_seconds"] if st["prompt_seconds"] else 0.0,
                decode_tokens_per_s=st["decode_tokens"] / st["decode_seconds"] if st["decode_seconds"] else 0.0,
                stats=st)
        finally:
            s.close()

    # ---- the forward ---------------------------------------------------------------------------
    def _layers(self, r: Rows, ids: Buffer, positions: Buffer, attend) -> None:
        """Embedding, decoder layers and the final norm over the rows of ``r`` (into ``r.xn``);
        ``attend(layer, r)`` stores the rows' keys and values and writes their attention into r.o3."""
        cfg, w = self.config, self.weights
        eps = cfg.rms_norm_eps
        ops.embedding(ids, w.embed, out=r.res, check=False)
        for i, L in enumerate(w.layers):
            if i == 0:
                ops.rmsnorm(r.res, L.ln1, eps, out=r.xn)
            else:
                ops.rmsnorm(r.mlp, L.ln1, eps, residual=r.res, out=r.xn)
            self._linear(r.xn, L.q, r.q, L.q_bias, r)
            self._linear(r.xn, L.k, r.k, L.k_bias, r)
            self._linear(r.xn, L.v, r.v, L.v_bias, r)
            ops.rope(r.q3, positions, cfg.rope_theta, rope_scaling=cfg.rope_scaling, k=r.k3)
            attend(i, r)
            self._linear(r.o, L.o, r.attn, L.o_bias, r)
            ops.rmsnorm(r.attn, L.ln2, eps, residual=r.res, out=r.xn)
            if L.gate_up is not None:
                self._gemv(r.xn, L.gate_up, r.gate_up)
                ops.silu_mul(r.gate_up, out=r.act)
            else:
                self._gemv(r.xn, L.gate, r.gate)
                self._gemv(r.xn, L.up, r.up)
                ops.silu_mul(r.gate, r.up, out=r.act)
            self._gemv(r.act, L.down, r.mlp)
        ops.rmsnorm(r.mlp, w.norm, eps, residual=r.res, out=r.xn)

    def _linear(self, x: Buffer, w: Buffer, out: Buffer, bias: Buffer | None, r: Rows) -> None:
        self._gemv(x, w, out)
        if bias is not None:  # + ones (n, 1) @ bias (1, N): the bias on every row, as a K = 1 gemm
            ops.gemm(r.ones, bias, out, beta=1.0)

    def _rows(self, n: int) -> Rows:
        """Activation buffers for a forward over n rows."""
        return Rows(self.device, self.config, n, self.dtype, gate_up=self.weights.layers[0].gate_up is not None)

    def _logits(self, x: Buffer, out: Buffer | None) -> Buffer:
        if out is None:
            out = self.device.empty((x.shape[0], self.config.vocab_size), np.float32)
        return self._gemv(x, self.weights.lm_head, out, out_f32=True)

    def _advance_kernel(self):
        if self._advance is None:
            src = (knobs.kernel_dir() / "llm_step.cl").read_text()
            self._advance = self.device.compile(src, "llm_advance")
        return self._advance

    def _decoder(self, batch: int) -> "Decoder":
        found = self._decoders.get(batch)
        if found is None:
            found = self._decoders[batch] = Decoder(self, batch)
        return found

    # ---- lifetime ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ClosedBufferError("this LlamaModel was closed; load it again")

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free every buffer of the model (weights, KV cache, captured graphs). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._session is not None:
            self._session.close()
            self._session = None
        for d in self._decoders.values():
            d.close()
        self._decoders = {}
        self._gemv.close()
        self.cache.close()
        self.weights.close()

    def __enter__(self) -> "LlamaModel":
        self._check_open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        c = self.config
        state = "closed" if self._closed else f"on {self.device.id}"
        return (f"<isthmus.llm.LlamaModel {c.model_type} {c.num_hidden_layers} layers hidden {c.hidden_size} "
                f"vocab {c.vocab_size} {self.dtype.name}, {'paged' if self.cache.paged else 'contiguous'} cache, "
                f"{state}>")


class Decoder:
    """The decode step of one batch size: its buffers and, per sampling mode, its captured graph."""

    def __init__(self, model: LlamaModel, batch: int):
        dev, cfg = model.device, model.config
        self.model, self.batch = model, batch
        self.rows = model._rows(batch)
        self._own = [dev.zeros((batch,), np.int32), dev.zeros((batch,), np.int32), dev.zeros((batch,), np.int32),
                     dev.zeros((batch,), np.int64), dev.empty((batch, model.cache.max_pages), np.int32),
                     dev.empty((batch, cfg.vocab_size), _F32)]
        self.tokens, self.positions, self.lengths, self.offsets, self.table, self.logits = self._own
        self.tokens_host = dev.empty_host((batch,), np.int32)  # page-locked where the backend has it
        self._tokens_mem = self.tokens._handle()
        self._get = functools.partial(dev.allocator.download, self._tokens_mem, self.tokens_host)
        self._graphs: dict = {}  # (greedy, top_k, nucleus) -> [graph, bound (temperature, top_p, seed)]

    def download(self) -> None:
        """The sampled tokens into ``tokens_host`` (waits for the step that writes them)."""
        if self.tokens.closed:
            self.tokens._check()
        self._get()

    def graph(self, cfg: GenerationConfig):
        """The captured step for ``cfg``'s sampling mode, its per-session scalars bound."""
        key = (cfg.greedy, 0 if cfg.greedy else cfg.top_k, not cfg.greedy and cfg.top_p < 1)
        scalars = (cfg.temperature, cfg.top_p, cfg.seed)
        found = self._graphs.get(key)
        if found is None:
            found = self._graphs[key] = [self._capture(cfg), scalars]
        elif found[1] != scalars:
            g = found[0]
            g.bind_all("seed", cfg.seed)
            if not cfg.greedy:
                g.bind_all("temperature", cfg.temperature)
                if key[2]:
                    g.bind_all("top_p", cfg.top_p)
            found[1] = scalars
        return found[0]

    def _capture(self, cfg: GenerationConfig):
        m, r, b = self.model, self.rows, self.batch
        cache = m.cache
        advance = m._advance_kernel()

        def attend(i: int, rows: Rows) -> None:
            cache.decode_append(i, rows.k3, rows.v3, self.table, self.positions)
            cache.attend(i, rows.q3, self.table, self.lengths, rows.o3)

        with m.device.capture() as graph:
            m._layers(r, self.tokens, self.positions, attend)
            m._logits(r.xn, self.logits)
            ops.sample(self.logits, cfg.temperature, cfg.top_k, cfg.top_p, cfg.seed, offsets=self.offsets,
                       out=self.tokens)
            advance(np.int32(b), self.positions, self.lengths, self.offsets,
                    config=LaunchConfig((-(-b // 64) * 64,), (64,)))
        return graph

    def close(self) -> None:
        for g, _ in self._graphs.values():
            g.close()
        self._graphs = {}
        for b in self._own:
            b.close()
        self._own = []
        self._tokens_mem = self._get = None
        self.rows.close()


def _positive(name: str, v, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi:
        raise InvalidArgumentError(f"LlamaModel.load: {name} must be a positive integer (at most {hi}), got {v!r}")
    return int(v)
