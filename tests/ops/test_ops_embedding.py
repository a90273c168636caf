"""isthmus.ops.embedding: rows of a table gathered by int32/int64 ids of any shape, bit for bit;
an id out of range is an InvalidArgumentError naming it (its row read clamped, never out of
bounds); check=False inside a captured graph, replayed with new ids; typed errors."""
import numpy as np
import pytest

import isthmus
from isthmus import ops
from isthmus.dtypes import lookup

DTYPES = ("float32", "float64", "float16", "bfloat16")


def _need(dev, dtype):
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("ids_shape,vocab,hidden", [((1,), 5, 3), ((1,), 1, 1), ((3,), 7, 1000), ((2, 5), 11, 4097),
                                                    ((2, 3, 4), 1009, 64), ((300,), 32, 33)])
def test_embedding_gathers_rows_bit_for_bit(dev, rng, dtype, id_dtype, ids_shape, vocab, hidden):
    _need(dev, dtype)
    table = rng.standard_normal((vocab, hidden)).astype(lookup(dtype).np)
    ids = rng.integers(0, vocab, ids_shape).astype(id_dtype)
    if ids.size > 1:
        ids.flat[0], ids.flat[-1] = 0, vocab - 1  # the first and last rows
    want = table[ids.astype(np.int64)]
    out = dev.asarray(np.full(want.shape, np.nan, np.float32).astype(table.dtype))  # poisoned
    bt, bi = dev.asarray(table), dev.asarray(ids)
    assert ops.embedding(bi, bt, out=out) is out
    np.testing.assert_array_equal(out.to_numpy().view(np.uint8), want.view(np.uint8))
    y = ops.embedding(bi, bt)
    assert y.shape == (*ids_shape, hidden) and y.dtype == table.dtype
    np.testing.assert_array_equal(y.to_numpy().view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("bad", [-1, 9, 10, 2**31 - 1, -2**31])
def test_an_id_out_of_range_is_an_error_naming_it(dev, rng, bad):
    table = rng.standard_normal((9, 17)).astype(np.float32)
    ids = rng.integers(0, 9, (3, 4)).astype(np.int32)
    ids[2, 1] = bad
    bt, bi = dev.asarray(table), dev.asarray(ids)
    live = isthmus.live_buffers()
    with pytest.raises(isthmus.InvalidArgumentError, match=rf"ids\[2, 1\] = {bad} is out of range for a table of 9 rows"):
        ops.embedding(bi, bt)
    assert isthmus.live_buffers() == live  # the new result was closed
    # unchecked: no error, and the row read is the clamped one (never memory past the table)
    y = ops.embedding(bi, bt, check=False).to_numpy()
    np.testing.assert_array_equal(y[2, 1], table[0 if bad < 0 else 8])
    mask = np.ones((3, 4), bool)
    mask[2, 1] = False
    np.testing.assert_array_equal(y[mask], table[ids[mask]])


def test_int64_ids_past_32_bits_are_out_of_range_not_wrapped(dev, rng):
    table = rng.standard_normal((5, 8)).astype(np.float32)
    ids = np.array([1, 2**32 + 1], np.int64)  # would read row 1 if truncated to 32 bits
    with pytest.raises(isthmus.InvalidArgumentError, match=r"ids\[1\] = 4294967297 is out of range"):
        ops.embedding(dev.asarray(ids), dev.asarray(table))


def test_a_captured_embedding_replays_with_new_ids(dev, rng):
    table = rng.standard_normal((50, 24)).astype(np.float32)
    bt, bi = dev.asarray(table), dev.asarray(np.zeros(6, np.int32))
    out = dev.empty((6, 24), np.float32)
    with pytest.raises(isthmus.InvalidArgumentError, match="embedding inside dev.capture.*pass check=False"):
        with dev.capture():
            ops.embedding(bi, bt, out=out)
    with dev.capture() as graph:
        ops.embedding(bi, bt, out=out, check=False)
    try:
        for _ in range(3):
            ids = rng.integers(0, 50, 6).astype(np.int32)
            bi.copy_from(ids)
            graph.launch()
            np.testing.assert_array_equal(out.to_numpy(), table[ids])
    finally:
        graph.close()


def test_embedding_errors_are_typed(dev):
    table, ids = dev.zeros((4, 8), np.float32), dev.zeros((3,), np.int32)
    cases = [(lambda: ops.embedding(dev.zeros((3,), np.float32), table), "ids must be int32 or int64, got float32"),
             (lambda: ops.embedding(ids, dev.zeros((32,), np.float32)), "table must be 2-D"),
             (lambda: ops.embedding(ids, table, out=dev.zeros((3, 7), np.float32)), r"out has shape \(3, 7\)"),
             (lambda: ops.embedding(ids, table, out=dev.zeros((3, 8), np.float16)), "out has dtype float16"),
             (lambda: ops.embedding(ids, dev.zeros((0, 8), np.float32)), "table has no rows"),
             (lambda: ops.embedding(ids, table, check=1), "check must be True or False"),
             (lambda: ops.embedding(np.zeros(3, np.int32), table), "must be an isthmus Buffer"),
             (lambda: ops.embedding(ids, dev.zeros((4, 8), np.int32)), "embedding does not support int32")]
    for call, message in cases:
        with pytest.raises(isthmus.InvalidArgumentError, match=message):
            call()
