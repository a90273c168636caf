"""The KV cache of a model: per layer a key and a value buffer, paged or contiguous.

Paged (the default): a pool of ``num_pages`` pages of ``page_size`` keys per layer, ``(num_pages,
page_size, kv_heads, head_dim)``, and an int32 page table ``(batch, max_pages)`` per batch that a
session fills from the pool's free list (-1: no page, which the kernels skip). Contiguous:
``(max_batch, max_context, kv_heads, head_dim)`` per layer, sequence b in row b; the prefill writes
it as a paged pool of ``max_batch`` pages of ``max_context`` keys (the same memory), so one append
path serves both.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..buffer import Buffer
from ..errors import InvalidArgumentError


class KVCache:
    def __init__(self, dev, layers: int, kv_heads: int, head_dim: int, dtype, *, paged: bool, max_batch: int,
                 max_context: int, page_size: int):
        self.paged = paged
        self.max_batch, self.max_context = max_batch, max_context
        if paged:
            self.page_size = page_size
            self.max_pages = -(-max_context // page_size)
            self.num_pages = max_batch * self.max_pages
            shape = (self.num_pages, page_size, kv_heads, head_dim)
        else:
            self.page_size, self.max_pages, self.num_pages = max_context, 1, max_batch
            shape = (max_batch, max_context, kv_heads, head_dim)
        self.k: list[Buffer] = []
        self.v: list[Buffer] = []
        try:
            for _ in range(layers):
                self.k.append(dev.empty(shape, dtype))
                self.v.append(dev.empty(shape, dtype))
        except Exception:
            self.close()
            raise
        self._views: dict = {}  # batch -> (k views, v views) of the first `batch` rows (contiguous)

    @property
    def buffers(self) -> list[Buffer]:
        return self.k + self.v

    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    # ---- a session's pages ---------------------------------------------------------------------
    def table(self, lengths: list[int]) -> np.ndarray:
        """The page table of a batch whose sequences hold at most ``lengths`` keys: (batch, max_pages)
        int32, pages from the pool, -1 where a sequence needs none (contiguous: the row index)."""
        b = len(lengths)
        if b > self.max_batch:
            raise InvalidArgumentError(f"a batch of {b} prompts exceeds the model's max_batch = {self.max_batch}; "
                                       f"load it with a larger max_batch")
        for i, n in enumerate(lengths):
            if n > self.max_context:
                raise InvalidArgumentError(f"prompt {i}: its {n} tokens (prompt plus max_new_tokens) exceed the "
                                           f"model's max_context = {self.max_context}; load it with a larger "
                                           f"max_context or ask for fewer new tokens")
        if not self.paged:
            return np.arange(b, dtype=np.int32).reshape(b, 1)
        table = np.full((b, self.max_pages), -1, np.int32)
        nxt = 0
        for i, n in enumerate(lengths):
            need = -(-n // self.page_size)
            table[i, :need] = np.arange(nxt, nxt + need, dtype=np.int32)
            nxt += need
        return table

    # ---- writing and reading -----------------------------------------------------------------
    def prefill_append(self, layer: int, k: Buffer, v: Buffer, token_table: Buffer, positions: Buffer) -> None:
        """Keys and values of packed prompt tokens ``(tokens, kv_heads, head_dim)``: token t at
        ``positions[t]`` of the sequence whose page-table row is ``token_table[t]``."""
        ops.paged_kv_append(self.k[layer], self.v[layer], k, v, token_table, positions)

    def decode_append(self, layer: int, k: Buffer, v: Buffer, table: Buffer, positions: Buffer) -> None:
        if self.paged:
            ops.paged_kv_append(self.k[layer], self.v[layer], k, v, table, positions)
        else:
            kc, vc = self._rows(layer, k.shape[0])
            ops.kv_append(kc, vc, k, v, positions)

    def attend(self, layer: int, q: Buffer, table: Buffer, lengths: Buffer, out: Buffer) -> None:
        if self.paged:
            ops.paged_decode_attention(q, self.k[layer], self.v[layer], table, lengths, out=out)
        else:
            kc, vc = self._rows(layer, q.shape[0])
            ops.decode_attention(q, kc, vc, lengths, out=out)

    def _rows(self, layer: int, batch: int) -> tuple[Buffer, Buffer]:
        """Views of the contiguous caches' first ``batch`` sequences (the same memory)."""
        views = self._views.get(batch)
        if views is None:
            def view(b: Buffer) -> Buffer:
                if batch == b.shape[0]:
                    return b
                shape = (batch,) + b.shape[1:]
                nbytes = b.nbytes // b.shape[0] * batch
                return Buffer(b.device, b._handle(), shape, b._dt, nbytes, owner=b)
            views = self._views[batch] = ([view(b) for b in self.k], [view(b) for b in self.v])
        return views[0][layer], views[1][layer]

    def close(self) -> None:
        for b in self.k + self.v:
            b.close()
        self.k, self.v, self._views = [], [], {}
