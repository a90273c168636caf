"""What a shard is (its arrays in) and what a task gives back (its results out), checked.

A shard is a NumPy array, a tuple or list of arrays (a task's several inputs), or an Arrow table,
record batch or array (its columns, as NumPy arrays: no copy where Arrow allows it). A task returns
an isthmus Buffer or a NumPy array, or a tuple or list of them; the caller gets NumPy arrays back
in the same form (one array, or a tuple).
"""
from __future__ import annotations

import numpy as np

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError


def shard_arrays(shard, index: int) -> tuple[np.ndarray, ...]:
    """The arrays of ``shard`` (shard number ``index``, for the messages), C-contiguous."""
    if isinstance(shard, (tuple, list)):
        items = tuple(shard)
    elif hasattr(shard, "columns") and hasattr(shard, "num_rows"):  # pyarrow Table / RecordBatch
        items = tuple(shard.columns)  # (each column converted below)
    elif isinstance(shard, np.ndarray) or (hasattr(shard, "to_numpy") and hasattr(shard, "type")):  # Arrow array
        items = (shard,)
    else:
        raise InvalidArgumentError(f"shard {index} is a {type(shard).__name__}; a shard must be a NumPy array, a "
                                   "tuple or list of arrays, or an Arrow table, record batch or array")
    if not items:
        raise InvalidArgumentError(f"shard {index} holds no arrays; give each shard at least one array")
    out = []
    for k, a in enumerate(items):
        if hasattr(a, "to_numpy") and hasattr(a, "type"):
            a = _arrow_numpy(a)
        if not isinstance(a, np.ndarray):
            raise InvalidArgumentError(f"shard {index}, array {k} is a {type(a).__name__}, not a NumPy array")
        if a.dtype.hasobject:
            raise InvalidArgumentError(f"shard {index}, array {k} has dtype {a.dtype}; device arrays hold numbers")
        out.append(np.ascontiguousarray(a))
    return tuple(out)


def _arrow_numpy(column) -> np.ndarray:
    # A column with nulls or several chunks needs one copy; pyarrow refuses it unless told it may.
    try:
        return column.to_numpy(zero_copy_only=False)
    except TypeError:  # ChunkedArray.to_numpy of older pyarrow takes no arguments (it always may copy)
        return column.to_numpy()


def task_outputs(produced, index: int) -> tuple[list, bool]:
    """(the outputs as a list of Buffers / arrays, whether the task returned one value)."""
    single = not isinstance(produced, (tuple, list))
    items = [produced] if single else list(produced)
    if not items:
        raise InvalidArgumentError(f"the task returned no results for shard {index}; return a Buffer or arrays")
    for k, item in enumerate(items):
        if not isinstance(item, (Buffer, np.ndarray)):
            raise InvalidArgumentError(f"the task returned a {type(item).__name__} as result {k} of shard {index}; "
                                       "return isthmus Buffers or NumPy arrays (or a tuple of them)")
    return items, single
