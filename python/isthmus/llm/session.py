"""Session: one batch of prompts being generated, step by step (what generate() and Java drive)."""
from __future__ import annotations

import time

import numpy as np

from .. import ops
from ..errors import InvalidArgumentError
from .generation import GenerationConfig

_I32_MAX = (1 << 31) - 1


def check_prompts(prompts, vocab: int) -> list[np.ndarray]:
    """``prompts`` as int32 arrays, each checked (a non-empty sequence of ids in [0, vocab))."""
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
        raise InvalidArgumentError(f"prompts must be a list of token-id lists, got {type(prompts).__name__}")
    if len(prompts) == 0:
        raise InvalidArgumentError("prompts is empty: give at least one prompt (a list of token ids)")
    out = []
    for i, p in enumerate(prompts):
        if isinstance(p, (str, bytes)) or not hasattr(p, "__len__"):
            raise InvalidArgumentError(f"prompts[{i}] must be a list of token ids, got {type(p).__name__}"
                                       + (" (encode text with isthmus.llm.Tokenizer first)" if isinstance(p, str)
                                          else ""))
        if len(p) == 0:
            raise InvalidArgumentError(f"prompts[{i}] is empty: a prompt needs at least one token")
        try:
            a = np.asarray(p)
        except Exception:
            a = None
        if a is None or a.ndim != 1 or a.dtype.kind not in "iu":
            raise InvalidArgumentError(f"prompts[{i}] must hold integer token ids, got {p!r:.80}")
        bad = (a < 0) | (a >= vocab)
        if bad.any():
            j = int(np.argmax(bad))
            raise InvalidArgumentError(f"prompts[{i}][{j}] = {int(a[j])} is not a token id of this model "
                                       f"(0 .. {vocab - 1})")
        out.append(a.astype(np.int32))
    return out


class Session:
    """A batch being generated: created by ``model.start(prompts, config)``, which runs the prefill;
    each ``step()`` returns the next token of every sequence (-1 for one that has finished, an empty
    list once all have); ``close()`` ends it (the model's buffers are reused by the next session).

    >>> s = model.start([[1, 2, 3], [4, 5]], GenerationConfig(max_new_tokens=4))
    >>> while not s.done:
    ...     print(s.step())
    >>> s.close()
    """

    def __init__(self, model, prompts, config: GenerationConfig, return_logits: bool = False):
        if not isinstance(config, GenerationConfig):
            raise InvalidArgumentError(f"config must be an isthmus.llm.GenerationConfig, got {type(config).__name__}")
        if not isinstance(return_logits, bool):
            raise InvalidArgumentError(f"return_logits must be True or False, got {return_logits!r}")
        self.model, self.config = model, config
        cfg = model.config
        seqs = check_prompts(prompts, cfg.vocab_size)
        self.batch = b = len(seqs)
        lens = [len(s) for s in seqs]
        table = model.cache.table([n + config.max_new_tokens for n in lens])
        self.closed = False
        self._prefill_logits = None
        self._host_logits = None
        self._remaining = config.max_new_tokens
        self._active = np.ones(b, bool)
        self._n_active, self._any_active = b, True
        self._stops = np.array(sorted(set(config.stop_tokens)), np.int32)
        self._decode_tokens = 0
        self._decode_seconds = 0.0
        self._graph_seconds = 0.0
        self._host_seconds, self._host_steps = 0.0, 0  # step()'s own work on the calling thread (stats)
        self._launched_at = None  # when the pending decode step was launched (None: none pending)
        dec = model._decoder(b)
        self._decoder = dec
        self._tokens_host = dec.tokens_host
        self._download = dec.download
        self._replay = None
        t0 = time.perf_counter()
        self._prefill(seqs, lens, table)
        self._prompt_seconds = time.perf_counter() - t0
        self._prompt_tokens = int(sum(lens))
        self._first = True  # the first step returns the prefill's token
        if return_logits:
            self._host_logits = self._prefill_logits.to_numpy()

    # ---- the prefill ---------------------------------------------------------------------------
    def _prefill(self, seqs: list[np.ndarray], lens: list[int], table: np.ndarray) -> None:
        m = self.model
        dev, cfg, cache, dec = m.device, m.config, m.cache, self._decoder
        b, total = len(seqs), int(sum(lens))
        starts = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        seq_of = np.repeat(np.arange(b), lens)
        positions = np.concatenate([np.arange(n, dtype=np.int32) for n in lens])
        temps = []

        def up(a):
            buf = dev.asarray(np.ascontiguousarray(a))
            temps.append(buf)
            return buf

        rows = m._rows(total)
        try:
            ids, pos, cu = up(np.concatenate(seqs)), up(positions), up(starts)
            tok_table, last = up(table[seq_of]), up(starts[1:] - 1)

            def attend(i: int, r) -> None:
                cache.prefill_append(i, r.k3, r.v3, tok_table, pos)
                ops.attention(r.q3, r.k3, r.v3, causal=True, cu_seqlens_q=cu, cu_seqlens_k=cu, out=r.o3)

            m._layers(rows, ids, pos, attend)
            h = ops.embedding(last, rows.xn, check=False)  # each prompt's last row
            temps.append(h)
            self._prefill_logits = m._logits(h, None)
            c = self.config
            ops.sample(self._prefill_logits, c.temperature, c.top_k, c.top_p, c.seed, offsets=0, out=dec.tokens)
            # the decode steps' state: step 1 feeds the token at position len, over len + 1 keys
            dec.table.copy_from(table)
            n = np.asarray(lens, np.int32)
            dec.positions.copy_from(n)
            dec.lengths.copy_from(n + 1)
            dec.offsets.copy_from(np.ones(b, np.int64))
            dec.download()  # (waits: the prompt's time is all spent)
        finally:
            rows.close()
            for t in temps:
                t.close()

    # ---- stepping ------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.closed or self._remaining <= 0 or not self._any_active

    def step(self) -> list[int]:
        """The next token of each sequence (-1 where it has finished); [] once every one has."""
        if self.closed:
            raise InvalidArgumentError("this session was closed")
        if self._remaining <= 0 or not self._any_active:
            return []
        t_in, graph_in = time.perf_counter(), self._graph_seconds  # (host_seconds: less the wait and any capture)
        host = self._tokens_host
        wait = 0.0
        if self._first:
            self._first = False
        else:
            if self._launched_at is None:
                self._launch()
            w0 = time.perf_counter()
            self._download()  # waits for the step
            w1 = time.perf_counter()
            self._decode_seconds += w1 - self._launched_at
            self._launched_at = None
            self._decode_tokens += self._n_active
            wait = w1 - w0
            self._host_steps += 1
        self._remaining -= 1
        if self._n_active == self.batch:
            out = host.tolist()
        else:
            out = np.where(self._active, host, -1).tolist()
        if self._stops.size:
            hit = (host[:, None] == self._stops).any(axis=1) & self._active
            if hit.any():
                self._active &= ~hit
                self._n_active = int(self._active.sum())
                self._any_active = self._n_active > 0
        if self._remaining > 0 and self._any_active:
            self._launch()  # the next step runs while the caller handles this one's tokens
        if self._host_steps:
            self._host_seconds += time.perf_counter() - t_in - wait - (self._graph_seconds - graph_in)
        return out

    def _launch(self) -> None:
        replay = self._replay
        if replay is None:
            # the first replay through Graph.launch (it checks the buffers and instantiates after a
            # rebind); later ones call the instantiated graph directly: the buffers are the model's
            # and the decoder's, which outlive this session. The step's capture (once per model,
            # batch and sampling mode: kernels built on first use) and instantiation are counted
            # apart (graph_seconds), not as decode time: a short generation would report them as
            # its speed. The step's own device time is still decode time (the launch is queued).
            t0 = time.perf_counter()
            graph = self._decoder.graph(self.config)
            graph.launch()
            self._launched_at = time.perf_counter()
            self._graph_seconds += self._launched_at - t0
            self._replay = graph._native
        else:
            self._launched_at = time.perf_counter()
            replay()

    def last_logits(self) -> np.ndarray:
        """The logits at each prompt's last position: float32 (batch, vocab)."""
        if self._host_logits is None:
            if self.closed or self._prefill_logits is None:
                raise InvalidArgumentError("last_logits: the session was closed before its logits were read; "
                                           "start it with return_logits=True")
            self._host_logits = self._prefill_logits.to_numpy()
        return self._host_logits

    def stats(self) -> dict:
        """prompt_tokens, prompt_seconds (the prefill and its first token), decode_tokens (tokens of
        sequences still running), decode_seconds (launch of each decode step to its tokens on the host),
        graph_seconds (capturing the decode step as a graph where this session was the first to need
        it, and instantiating it: set-up, not in decode_seconds), host_seconds and host_steps (the
        calling thread's time inside step() over the decode steps, less the waits for their tokens and
        any graph capture: the host's own work per step, launch and bookkeeping, whatever the device
        takes)."""
        return {"prompt_tokens": self._prompt_tokens, "prompt_seconds": self._prompt_seconds,
                "decode_tokens": self._decode_tokens, "decode_seconds": self._decode_seconds,
                "graph_seconds": self._graph_seconds, "host_seconds": self._host_seconds,
                "host_steps": self._host_steps}

    def close(self) -> None:
        """End the session (idempotent); a pending step is waited for."""
        if self.closed:
            return
        if self._launched_at is not None:
            try:
                self._download()
            except Exception:  # pragma: no cover - the model was closed underneath
                pass
            self._launched_at = None
        self.closed = True
        if self._prefill_logits is not None:
            self._prefill_logits.close()
            self._prefill_logits = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
