"""embedding: rows of a table gathered by integer ids, ``out[..., :] = table[ids[...], :]``.

ids: int32 or int64, of any shape; the result has shape ``ids.shape + (hidden,)`` and the table's
dtype. An id outside ``0 .. vocab-1`` is never read out of bounds: the kernel reads the clamped
row and raises a flag, which the op reads after the launch (``check=True``, a wait for the
device) and turns into an InvalidArgumentError naming the first such id. Inside ``dev.capture()``
nothing can be read after a launch: pass ``check=False`` there (clamped rows, no error).
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError
from .. import checks
from ..resolve import plan, resolve
from ..spec import OpSpec, Sizes
from .glu import ROW_RESTRICTIONS, ROW_TUNABLES, row_grid, sample

_IDS = {"int32": "int", "int64": "long"}  # ids dtype -> ID (the kernel's type for them)
_VOCAB = 4099  # the sample problems' table rows (a prime)

SIZES = Sizes(gpu={"rows": 16384, "cols": 4096}, cpu={"rows": 2048, "cols": 4096},
              quick={"rows": 256, "cols": 1024}, tiny={"rows": 4, "cols": 64},
              odd=({"rows": 1, "cols": 1}, {"rows": 3, "cols": 1000}, {"rows": 37, "cols": 4097}))


def _steps(dev, dt, rows: int, cols: int, id_type: int) -> tuple:
    params, kernels = resolve(SPEC, dev, dt, {"rows": max(rows, 1), "cols": max(cols, 1)}, (("ID", id_type),))
    return (kernels["embedding"], *row_grid(rows, cols, params))


def embedding(ids, table, out=None, check=True):
    """The rows of ``table`` (vocab, hidden) at ``ids`` (int32/int64, any shape), as a new Buffer
    of shape ``ids.shape + (hidden,)`` or into ``out``. ``check``: read the kernel's out-of-range
    flag after the launch (waits for the device) and raise InvalidArgumentError for an id outside
    0 .. vocab-1 (whose rows were read clamped, never out of bounds); ``check=False`` inside
    ``dev.capture()`` and where no wait is wanted.

    >>> h = isthmus.ops.embedding(token_ids, embed_tokens)     # (batch, seq) -> (batch, seq, hidden)
    """
    ids = checks.buffer("embedding", "ids", ids)
    table = checks.buffer("embedding", "table", table, ndim=2)
    check = checks.flag("embedding", "check", check)
    dev, dt = table.device, table._dt or checks.dtype(table)
    if ids.device is not dev:
        raise InvalidArgumentError(f"embedding: ids live on {ids.device.id}, table on {dev.id}; copy them with "
                                   f".to({dev.id!r})")
    id_type = _IDS.get((ids._dt or checks.dtype(ids)).name)
    if id_type is None:
        raise InvalidArgumentError(f"embedding: ids must be int32 or int64, got {ids.dtype}")
    vocab, cols = table.shape
    rows = math.prod(ids.shape)
    if rows and not vocab:
        raise InvalidArgumentError(f"embedding: table has no rows (shape {table.shape}); no id can be looked up")
    if check:
        try:  # (what a graph capture refuses: the flag's read after the launch)
            dev._host_work("embedding's check of its ids")
        except InvalidArgumentError:
            raise InvalidArgumentError("embedding inside dev.capture() (or a prepared plan): check=True reads the "
                                       "device after the launch, which a graph cannot replay; pass check=False (an "
                                       "out-of-range id then reads its clamped row)") from None
    kernel, g, loc = plan(SPEC, (dev, dt.name, ids.shape, table.shape, id_type),
                          lambda: _steps(dev, dt, rows, cols, id_type))
    y = checks.output("embedding", out, table, (*ids.shape, cols))
    checks.disjoint("embedding", y, ids=ids, table=table)
    if not rows * cols:
        return y
    if not check:
        dev.launch(kernel, g, loc, [np.int64(rows), np.int64(cols), np.int64(vocab), ids, table, y,
                                    dev._temporary(4)])
        return y
    flag = dev.zeros((1,), np.int32)
    try:
        dev.launch(kernel, g, loc, [np.int64(rows), np.int64(cols), np.int64(vocab), ids, table, y, flag])
        bad = int(flag.to_numpy()[0])
    finally:
        flag.close()
    if bad:
        host = ids.to_numpy().reshape(-1)
        where = int(np.flatnonzero((host < 0) | (host >= vocab))[0])
        if y is not out:
            y.close()
        index = np.unravel_index(where, ids.shape)
        raise InvalidArgumentError(f"embedding: ids[{', '.join(str(int(i)) for i in index)}] = {host[where]} is out of "
                                   f"range for a table of {vocab} rows (0 <= id < {vocab})")
    return y


def reference(xp, ids, table):
    return table[ids.astype(xp.int64)]


SPEC = OpSpec(
    name="embedding", source="embedding.cl", entries=("embedding",),
    dtypes=("float32", "float64", "float16", "bfloat16"),
    storage=(("float16", "ushort"), ("bfloat16", "ushort")),  # a copy of the bits
    defines=(("ID", "int"),), tunables=ROW_TUNABLES, problem=("rows", "cols"), restrictions=ROW_RESTRICTIONS,
    cpu_defaults=(("WG", 16), ("VPT", 4), ("LAYOUT", 1)),
    run=embedding, reference=reference, sizes=SIZES,
    inputs=lambda p, dt, rng: (rng.integers(0, _VOCAB, p["rows"]).astype(np.int32), sample(rng, (_VOCAB, p["cols"]), dt)),
    moved=lambda p, size: 2 * p["rows"] * p["cols"] * size + 4 * p["rows"],
    summary="rows of a table gathered by int32/int64 ids of any shape", doc=embedding.__doc__)
