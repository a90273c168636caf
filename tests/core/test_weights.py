"""Device.load_safetensors (isthmus.weights): checkpoints written by the safetensors package come
back bit for bit, in one file, through an index's shards or from a folder, through staging
chunks smaller than the tensors; every kind of damaged file is its typed error and leaves nothing
allocated."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import isthmus
from isthmus.errors import ClosedBufferError, FormatError, InvalidArgumentError, OutOfMemoryError, UnsupportedDtypeError

safetensors_numpy = pytest.importorskip("safetensors.numpy")

DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "int32": np.int32, "int64": np.int64, "uint8": np.uint8}
SHAPES = [(), (1,), (0,), (7,), (3, 0, 2), (13, 17), (2, 3, 5), (1, 1, 1, 9), (129,)]


def random_tensors(rng, dev, prefix="t") -> dict[str, np.ndarray]:
    """Random bit patterns (NaNs, infinities, subnormals included) of every dtype the device holds,
    in odd shapes, 0-d and empty ones among them."""
    out = {}
    for name, dt in DTYPES.items():
        if not dev.supports(name):
            continue
        for i, shape in enumerate(SHAPES):
            n = int(np.prod(shape)) * np.dtype(dt).itemsize
            out[f"{prefix}.{name}.{i}"] = np.frombuffer(rng.bytes(n), dt).reshape(shape).copy()
    return out


def assert_loaded(weights, expected: dict) -> None:
    assert sorted(weights.names()) == sorted(expected)
    for name, host in expected.items():
        buf = weights[name]
        assert buf.dtype == host.dtype and buf.shape == host.shape, name
        got = buf.to_numpy()
        assert got.tobytes() == host.tobytes(), name  # bit for bit, NaN payloads too


@pytest.fixture
def staging(monkeypatch):
    """Set the staging buffers' size in KiB."""
    return lambda kib: monkeypatch.setenv("ISTHMUS_LOAD_STAGING_KB", str(kib))


@pytest.mark.parametrize("kib", [1, 65536])
def test_every_dtype_and_odd_shapes_come_back_exactly(dev, rng, tmp_path, staging, kib):
    staging(kib)  # 1 KiB: tensors span chunks and chunks span tensors
    tensors = random_tensors(rng, dev)
    tensors["big"] = rng.standard_normal(3001).astype(np.float32)
    safetensors_numpy.save_file(tensors, tmp_path / "one.safetensors", metadata={"format": "pt"})
    before = isthmus.live_buffers()
    with dev.load_safetensors(tmp_path / "one.safetensors") as weights:
        assert_loaded(weights, tensors)
        assert isthmus.live_buffers() == before + len(tensors)
        assert weights.nbytes == sum(t.nbytes for t in tensors.values())
    assert isthmus.live_buffers() == before


def test_shards_through_the_index_of_a_folder(dev, rng, tmp_path, staging):
    staging(2)
    shards = [random_tensors(rng, dev, prefix=f"s{i}") for i in range(3)]
    shards[1] = {k: v for k, v in list(shards[1].items())[:5]}  # shards of different sizes
    weight_map = {}
    for i, tensors in enumerate(shards):
        name = f"model-{i + 1:05d}-of-00003.safetensors"
        safetensors_numpy.save_file(tensors, tmp_path / name)
        weight_map.update(dict.fromkeys(tensors, name))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    expected = {k: v for tensors in shards for k, v in tensors.items()}
    for path in (tmp_path, tmp_path / "model.safetensors.index.json", str(tmp_path)):
        with dev.load_safetensors(path) as weights:
            assert_loaded(weights, expected)


def test_a_folder_with_one_file(dev, rng, tmp_path):
    tensors = random_tensors(rng, dev)
    safetensors_numpy.save_file(tensors, tmp_path / "model.safetensors")
    with dev.load_safetensors(tmp_path) as weights:
        assert_loaded(weights, tensors)


def test_only_empty_tensors(dev, tmp_path):
    tensors = {"a": np.zeros((0, 3), np.float32), "b": np.zeros((5, 0), ml_dtypes.bfloat16)}
    safetensors_numpy.save_file(tensors, tmp_path / "empty.safetensors")
    with dev.load_safetensors(tmp_path / "empty.safetensors") as weights:
        assert_loaded(weights, tensors)


def test_the_next_chunk_is_read_while_the_last_one_copies(dev, rng, tmp_path, staging, monkeypatch):
    """Chunk k+1 is read into the other staging buffer before the copies out of chunk k are
    waited for (the overlap), and a staging buffer is refilled only after its copies are done."""
    from isthmus.weights import staging as staging_mod

    staging(4)
    tensors = {"a": rng.standard_normal(10_000).astype(np.float32), "b": rng.integers(0, 9, 7_001, dtype=np.int64)}
    safetensors_numpy.save_file(tensors, tmp_path / "big.safetensors")
    events = []
    read, wait, upload = staging_mod._Mapped.read, staging_mod._Slot.wait, dev.allocator.upload_async
    monkeypatch.setattr(staging_mod._Mapped, "read",
                        lambda self, start, stop, into: (events.append(("read", start)), read(self, start, stop, into)))
    monkeypatch.setattr(staging_mod._Slot, "wait",
                        lambda self, settle=False: (events.append(("wait", bool(self.done))), wait(self, settle)))

    def queued(mem, offset, host):  # (a chunk's copies, one per tensor piece, as one event)
        if events[-1] != ("queued",):
            events.append(("queued",))
        return upload(mem, offset, host)
    monkeypatch.setattr(dev.allocator, "upload_async", queued)
    with dev.load_safetensors(tmp_path / "big.safetensors") as weights:
        assert_loaded(weights, tensors)
    reads = [e for e in events if e[0] == "read"]
    assert len(reads) == -(-(40_000 + 56_008) // 4096)
    # per chunk: wait for the copies out of this slot (two chunks back), read, queue; then the last two,
    # and nothing left to settle
    for k in range(len(reads)):
        assert events[3 * k:3 * k + 3] == [("wait", k >= 2), reads[k], ("queued",)], events[3 * k:3 * k + 3]
    assert events[3 * len(reads):] == [("wait", True), ("wait", True), ("wait", False), ("wait", False)]


def test_chunks_read_by_several_threads(dev, rng, tmp_path, staging):
    """A staging chunk of 8 MiB or more is read from the map by several threads (4 MiB each at least)."""
    from isthmus.weights.staging import _Readers

    staging(8192 + 3)
    assert _Readers(8192 + 3 << 10).count == min(os.cpu_count(), 2)
    tensors = {"a": np.frombuffer(rng.bytes(21 << 20), np.float16).reshape(-1, 7 << 10).copy(),
               "b": rng.integers(0, 255, 1_000_003, dtype=np.uint8)}
    safetensors_numpy.save_file(tensors, tmp_path / "big.safetensors")
    with dev.load_safetensors(tmp_path / "big.safetensors") as weights:
        assert_loaded(weights, tensors)


def test_closed_weights_refuse_use(dev, tmp_path):
    safetensors_numpy.save_file({"x": np.ones(4, np.float32)}, tmp_path / "x.safetensors")
    weights = dev.load_safetensors(tmp_path / "x.safetensors")
    x = weights["x"]
    with pytest.raises(KeyError, match="no tensor 'y'"):
        weights["y"]
    weights.close()
    weights.close()
    assert x.closed
    with pytest.raises(ClosedBufferError, match="were closed"):
        weights["x"]


def test_loading_is_refused_inside_a_graph_capture(dev, tmp_path):
    safetensors_numpy.save_file({"x": np.ones(4, np.float32)}, tmp_path / "x.safetensors")
    before = isthmus.live_buffers()
    with pytest.raises(InvalidArgumentError, match="loading safetensors cannot be captured"):
        with dev.capture():
            dev.load_safetensors(tmp_path / "x.safetensors")
    assert isthmus.live_buffers() == before


def test_the_loader_needs_no_safetensors_package(tmp_path):
    write(tmp_path / "x.safetensors", {"x": entry("F32", [2], 0, 8)}, struct.pack("<2f", 1.5, -2.0))
    code = ("import sys; sys.modules['safetensors'] = None\n"
            "import isthmus\n"
            f"w = isthmus.device().load_safetensors({str(tmp_path / 'x.safetensors')!r})\n"
            "print(w['x'].to_numpy().tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.5, -2.0]"


# ---- damaged files -----------------------------------------------------------------------------------
def entry(dtype, shape, begin, end) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def write(path, header, data: bytes = b"", length: int | None = None):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


GOOD = {"a": entry("F32", [2, 2], 0, 16), "b": entry("I64", [1], 16, 24)}
DATA = bytes(range(24))

# (what, header, data, header length or None, error, what the message says)
DAMAGED = [
    ("short file", None, b"", None, FormatError, "too short"),
    ("truncated data", GOOD, DATA[:20], None, FormatError, r"'b' has data_offsets \[16, 24\] past the end"),
    ("header past the file", GOOD, DATA, 10_000, FormatError, "header length 10000 runs past the end"),
    ("header above the limit", GOOD, DATA, 100_000_001, FormatError, "above safetensors' limit"),
    ("header not JSON", b"{not json", DATA, None, FormatError, "header is not JSON"),
    ("header nested too deep", b"[" * 100_000, DATA, None, FormatError, "header is not JSON"),
    ("header not UTF-8", b'{"\xff": 1}', DATA, None, FormatError, "header is not JSON"),
    ("header a list", [1, 2], b"", None, FormatError, "header is a JSON list"),
    ("entry not an object", {"a": [1]}, b"", None, FormatError, "'a' is a JSON list"),
    ("no dtype", {"a": {"shape": [1], "data_offsets": [0, 4]}}, DATA[:4], None, FormatError, "'a' has no 'dtype'"),
    ("no shape", {"a": {"dtype": "F32", "data_offsets": [0, 4]}}, DATA[:4], None, FormatError, "'a' has no 'shape'"),
    ("no offsets", {"a": {"dtype": "F32", "shape": [1]}}, DATA[:4], None, FormatError, "has no 'data_offsets'"),
    ("negative dim", {"a": entry("F32", [-1], 0, 4)}, DATA[:4], None, FormatError, "list of non-negative integers"),
    ("bool dim", {"a": entry("F32", [True], 0, 4)}, DATA[:4], None, FormatError, "list of non-negative integers"),
    ("three offsets", {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}, DATA[:8], None,
     FormatError, r"expected \[begin, end\]"),
    ("end before begin", {"a": entry("F32", [0], 4, 0)}, DATA[:4], None, FormatError, "end is before its begin"),
    ("size mismatch", {"a": entry("F32", [3], 0, 8)}, DATA[:8], None, FormatError, "12 bytes.*span 8 bytes"),
    ("out of range", {"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 8, 16)}, DATA[:12], None, FormatError,
     "past the end of the data"),
    ("overlap", {"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)}, DATA[:12], None, FormatError,
     "overlap"),
    ("hole", {"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}, DATA[:12], None, FormatError,
     r"bytes \[4, 8\] belong to no tensor"),
    ("trailing bytes", GOOD, DATA + b"xx", None, FormatError, "2 bytes after the last tensor"),
    ("duplicate name", b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, '
                       b'"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}', DATA[:2], None, FormatError,
     "'a' appears twice"),
    ("metadata not an object", {"__metadata__": [1], **GOOD}, DATA, None, FormatError, "__metadata__ is a JSON list"),
    ("unknown dtype", {**GOOD, "c": entry("F17", [1], 24, 26)}, DATA + b"..", None, UnsupportedDtypeError,
     "'c' has dtype 'F17' .not a safetensors dtype"),
    ("refused dtype", {**GOOD, "c": entry("I8", [2], 24, 26)}, DATA + b"..", None, UnsupportedDtypeError,
     "'c' has dtype 'I8' .isthmus has no such dtype"),
    ("refused bool", {"m": entry("BOOL", [2], 0, 2)}, DATA[:2], None, UnsupportedDtypeError, "'m' has dtype 'BOOL'"),
]


@pytest.mark.parametrize("what,header,data,length,error,message", DAMAGED, ids=[d[0] for d in DAMAGED])
def test_damaged_files_are_typed_errors(dev, tmp_path, what, header, data, length, error, message):
    path = tmp_path / "bad.safetensors"
    if header is None:
        path.write_bytes(b"\x10\x00\x00")
    else:
        write(path, header, data, length)
    before, in_use = isthmus.live_buffers(), dev.memory_in_use()
    with pytest.raises(error, match=message) as info:
        dev.load_safetensors(path)
    assert str(path) in str(info.value)
    assert isthmus.live_buffers() == before and dev.memory_in_use() == in_use


def sharded(tmp_path, shards: dict[str, dict], weight_map) -> None:
    for name, tensors in shards.items():
        safetensors_numpy.save_file(tensors, tmp_path / name)
    (tmp_path / "model.safetensors.index.json").write_text(
        weight_map if isinstance(weight_map, str) else json.dumps({"weight_map": weight_map}))


ONE, TWO = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.int32)
BAD_INDEXES = [
    ("missing shard", {"s1": {"x": ONE}}, {"x": "s1", "y": "s2"}, "names shards that are not in .*: s2"),
    ("tensor in two shards", {"s1": {"x": ONE}, "s2": {"x": ONE, "y": TWO}}, {"x": "s1", "y": "s2"},
     "'x' is in two files"),
    ("tensor in another shard", {"s1": {"x": ONE, "z": TWO}, "s2": {"y": TWO}}, {"z": "s1", "x": "s2", "y": "s2"},
     "s1 holds tensor 'x', which model.safetensors.index.json places in s2"),
    ("tensor not named", {"s1": {"x": ONE, "z": ONE}}, {"x": "s1"}, "holds tensor 'z', which .* does not name"),
    ("tensor not held", {"s1": {"x": ONE}}, {"x": "s1", "q": "s1"}, "names tensors that their shards do not hold: q"),
    ("index not JSON", {"s1": {"x": ONE}}, "{", "is not JSON"),
    ("no weight_map", {"s1": {"x": ONE}}, '{"weights": {}}', 'no "weight_map"'),
]


@pytest.mark.parametrize("what,shards,weight_map,message", BAD_INDEXES, ids=[b[0] for b in BAD_INDEXES])
def test_bad_indexes_are_format_errors(dev, tmp_path, what, shards, weight_map, message):
    sharded(tmp_path, shards, weight_map)
    before, in_use = isthmus.live_buffers(), dev.memory_in_use()
    with pytest.raises(FormatError, match=message):
        dev.load_safetensors(tmp_path)
    assert isthmus.live_buffers() == before and dev.memory_in_use() == in_use


def test_a_folder_without_a_checkpoint_says_what_it_holds(dev, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    safetensors_numpy.save_file({"x": ONE}, tmp_path / "adapter.safetensors")
    with pytest.raises(InvalidArgumentError, match="holds neither .* it holds: adapter.safetensors, config.json"):
        dev.load_safetensors(tmp_path)
    with pytest.raises(InvalidArgumentError, match="no such file or folder"):
        dev.load_safetensors(tmp_path / "nothing-here")


def test_an_error_while_copying_frees_what_was_loaded(dev, rng, tmp_path, staging, monkeypatch):
    """The second shard changes size after its header was checked: the first shard's tensors were
    allocated and copied by then, and are freed with the error (no partial load)."""
    from isthmus import weights

    staging(1)
    shards = {"s1": random_tensors(rng, dev, "a"), "s2": {"b": rng.standard_normal(1000).astype(np.float32)}}
    sharded(tmp_path, shards, {**dict.fromkeys(shards["s1"], "s1"), "b": "s2"})
    read_header = weights.read_header

    def and_then_truncate(path, device):
        found = read_header(path, device)
        if path.name == "s2":
            os.truncate(path, path.stat().st_size - 4)
        return found
    monkeypatch.setattr(weights, "read_header", and_then_truncate)
    before, in_use = isthmus.live_buffers(), dev.memory_in_use()
    with pytest.raises(FormatError, match="s2 changed size while it was being loaded") as info:
        dev.load_safetensors(tmp_path)
    assert info.value.__traceback__ is not None  # (its frames are alive: the garbage collector freed nothing)
    assert isthmus.live_buffers() == before and dev.memory_in_use() == in_use


def test_an_allocation_the_device_refuses_frees_the_others(dev, tmp_path):
    """A tensor larger than the device can hold (a sparse file): the tensors allocated before it
    are freed and the error is the device's."""
    huge = 1 << 40  # bytes of F32 data, past any device's largest allocation
    header = {"small": entry("F32", [4], 0, 16), "huge": entry("F32", [huge // 4], 16, 16 + huge)}
    path = write(tmp_path / "huge.safetensors", header)
    os.truncate(path, path.stat().st_size + 16 + huge)
    before, in_use = isthmus.live_buffers(), dev.memory_in_use()
    with pytest.raises(OutOfMemoryError) as info:
        dev.load_safetensors(path)
    assert info.value.__traceback__ is not None  # (its frames are alive: the garbage collector freed nothing)
    assert isthmus.live_buffers() == before and dev.memory_in_use() == in_use
