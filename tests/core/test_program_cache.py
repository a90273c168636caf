"""The disk program cache and the per-device memo on every device: entries are verified before the
driver sees them, bad entries are misses, special files are never opened, sizes are bounded."""
import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import isthmus
from isthmus import LaunchConfig, program_cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILL = "__kernel void fill(__global int* x) { x[get_global_id(0)] = VALUE; }"
OTHER = "__kernel void other(__global int* x) { x[get_global_id(0)] = -VALUE; }"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ISTHMUS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ISTHMUS_DISK_CACHE", raising=False)
    return tmp_path


def _run_fill(dev, value: int, n: int = 5) -> list:
    k = dev.compile(FILL, "fill", {"VALUE": value})
    out = dev.asarray(np.full(n, -7, np.int32))
    k(out, config=LaunchConfig((n,)))
    return out.to_numpy().tolist()


def _key(dev, source: str, value: int) -> str:
    return dev.compile(source, source.split("void ")[1].split("(")[0], {"VALUE": value}).program.key


def _forget(dev) -> None:
    dev._kernels.clear()


# A child process, so that a driver that aborts on a bad binary shows up as a failed test instead of
# killing pytest. It truncates the entry at each length, forgets the in-memory program and compiles
# again: every time the result must be right and the entry must be rebuilt from source.
TRUNCATE_SCRIPT = """
import json, os, sys
import numpy as np
import isthmus
from isthmus import LaunchConfig, program_cache
dev = isthmus.device({dev!r})
src = {src!r}
k = dev.compile(src, 'fill', {{'VALUE': {value}}})
path = program_cache.entry_path(k.program.key)
full = path.read_bytes()
lengths = sorted({{0, 1, 15, 16, 40, program_cache._HEADER.size - 1, program_cache._HEADER.size,
                   program_cache._HEADER.size + 1, len(full) - 1, *range(0, len(full), max(1, len(full) // 23))}})
done = []
for n in lengths:
    with open(path, 'r+b') as f:
        f.truncate(n)
    dev._kernels.clear()
    before = isthmus.program.stats['compiles']
    k = dev.compile(src, 'fill', {{'VALUE': {value}}})
    out = dev.asarray(np.zeros(3, np.int32))
    k(out, config=LaunchConfig((3,)))
    assert out.to_numpy().tolist() == [{value}] * 3, (n, out.to_numpy())
    assert isthmus.program.stats['compiles'] == before + 1, n
    assert path.read_bytes() == full or program_cache.unpack(k.program.key, path.read_bytes()) is not None
    done.append(n)
print(json.dumps(done))
"""


def test_truncated_entry_at_any_length_is_rebuilt_not_loaded(dev, cache):
    value = int.from_bytes(os.urandom(2), "little") + 1
    run = subprocess.run([sys.executable, "-c", TRUNCATE_SCRIPT.format(dev=dev.id, src=FILL, value=value)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT,
                         env={**os.environ, "ISTHMUS_CACHE_DIR": str(cache)})
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(json.loads(run.stdout.strip().splitlines()[-1])) >= 20


def test_entry_verification_rejects_every_truncation_and_bit_flip():
    key = os.urandom(32).hex()
    payload = os.urandom(997)
    data = program_cache.pack(key, payload)
    assert program_cache.unpack(key, data) == payload
    for n in range(len(data)):
        assert program_cache.unpack(key, data[:n]) is None, n
    for i in range(0, len(data), 7):
        flipped = bytearray(data)
        flipped[i] ^= 0x10
        assert program_cache.unpack(key, bytes(flipped)) is None, i
    assert program_cache.unpack(os.urandom(32).hex(), data) is None
    assert program_cache.unpack(key, data + b"x") is None


def test_foreign_binary_under_an_entry_name_is_not_run(dev, cache):
    a, b = 1000 + int.from_bytes(os.urandom(2), "little"), 7
    key_a, key_b = _key(dev, FILL, a), _key(dev, FILL, b)
    assert key_a != key_b
    # another program's binary, stored whole (header included) under a's name
    program_cache.entry_path(key_a).write_bytes(program_cache.entry_path(key_b).read_bytes())
    _forget(dev)
    assert _run_fill(dev, a) == [a] * 5
    assert program_cache.read(key_a) is not None  # rebuilt and stored again
    # and a raw binary without a header (format 1 stored those) is a miss too
    raw = program_cache.read(key_b)
    program_cache.entry_path(key_a).write_bytes(raw)
    _forget(dev)
    assert _run_fill(dev, a) == [a] * 5


def test_entry_lacking_the_kernel_is_dropped_and_rebuilt(dev, cache):
    value = int.from_bytes(os.urandom(2), "little") + 1
    key_fill, key_other = _key(dev, FILL, value), _key(dev, OTHER, value)
    # a well-formed entry for fill's recipe whose binary holds only `other`
    program_cache.write(key_fill, program_cache.read(key_other))
    _forget(dev)
    before = isthmus.program.stats["compiles"]
    assert _run_fill(dev, value) == [value] * 5  # no CompileError, and none in later processes either
    assert isthmus.program.stats["compiles"] == before + 1
    _forget(dev)
    assert _run_fill(dev, value) == [value] * 5
    assert isthmus.program.stats["compiles"] == before + 1  # the rebuilt entry is a good one


def test_directory_at_entry_path_is_a_miss(dev, cache):
    value = int.from_bytes(os.urandom(2), "little") + 1
    key = _key(dev, FILL, value)
    path = program_cache.entry_path(key)
    path.unlink()
    path.mkdir()
    (path / "x").write_text("someone's file")
    _forget(dev)
    assert _run_fill(dev, value) == [value] * 5
    assert (path / "x").read_text() == "someone's file"  # left alone
    assert not list(path.parent.glob(".tmp-*"))


FIFO_SCRIPT = """
import numpy as np, isthmus
from isthmus import LaunchConfig
dev = isthmus.device({dev!r})
k = dev.compile({src!r}, 'fill', {{'VALUE': {value}}})
out = dev.asarray(np.zeros(2, np.int32))
k(out, config=LaunchConfig((2,)))
print(out.to_numpy().tolist())
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_fifo_at_entry_path_does_not_hang(dev, cache):
    value = int.from_bytes(os.urandom(2), "little") + 1
    key = _key(dev, FILL, value)
    path = program_cache.entry_path(key)
    path.unlink()
    os.mkfifo(path)
    run = subprocess.run([sys.executable, "-c", FIFO_SCRIPT.format(dev=dev.id, src=FILL, value=value)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "ISTHMUS_CACHE_DIR": str(cache)})
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == str([value] * 2)
    assert path.is_file()  # the FIFO was replaced by a real entry


def test_failed_write_leaves_no_temp_file(dev, cache, monkeypatch):
    def full_disk(f, data):
        f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(program_cache, "_write_all", full_disk)
    value = int.from_bytes(os.urandom(2), "little") + 1
    assert _run_fill(dev, value) == [value] * 5
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.startswith(".tmp-")], files
    assert not [p for p in files if p.suffix == ".bin"], files


def test_memo_keeps_the_most_recently_used_programs(dev, cache, monkeypatch):
    monkeypatch.setenv("ISTHMUS_PROGRAM_MEMO", "3")
    monkeypatch.setenv("ISTHMUS_DISK_CACHE", "0")
    _forget(dev)
    base = int.from_bytes(os.urandom(2), "little") * 16
    first = dev.compile(FILL, "fill", {"VALUE": base}).program
    for i in range(1, 8):
        dev.compile(FILL, "fill", {"VALUE": base + i})
        dev.compile(FILL, "fill", {"VALUE": base})  # kept alive by use
        assert len(dev._kernels) <= 3
    assert dev.compile(FILL, "fill", {"VALUE": base}).program is first
    before = isthmus.program.stats["compiles"]
    assert _run_fill(dev, base + 1) == [base + 1] * 5  # evicted long ago: compiled again, still right
    assert isthmus.program.stats["compiles"] == before + 1


def test_disk_cache_is_evicted_beyond_its_limit(cache, monkeypatch):
    keys = [os.urandom(32).hex() for _ in range(8)]
    for i, key in enumerate(keys):
        program_cache.write(key, os.urandom(300_000))
        os.utime(program_cache.entry_path(key), (1000 + i, 1000 + i))  # a distinct age for each
    program_cache.read(keys[0])  # used: the most recent now
    monkeypatch.setenv("ISTHMUS_PROGRAM_CACHE_MB", "1")
    program_cache.write(os.urandom(32).hex(), os.urandom(300_000))
    kept = [k for k in keys if program_cache.entry_path(k).exists()]
    total = sum(p.stat().st_size for p in cache.rglob("*.bin"))
    assert total <= 1 << 20
    assert keys[0] in kept and keys[-1] in kept and keys[1] not in kept
    monkeypatch.setenv("ISTHMUS_PROGRAM_CACHE_MB", "0")
    key = os.urandom(32).hex()
    program_cache.write(key, b"x" * 10)
    assert not program_cache.entry_path(key).exists()


CRASH_SCRIPT = """
import json, os, sys
import isthmus
from isthmus import LaunchConfig
dev = isthmus.device({dev!r})
if sys.argv[1] == "crash":
    dev.compiler.load_binary = lambda binary, options: os.abort()  # a driver that dies on this (intact) entry
k = dev.compile({src!r}, 'fill', {{'VALUE': {value}}})
import numpy as np
out = dev.asarray(np.zeros(2, np.int32))
k(out, config=LaunchConfig((2,)))
print(json.dumps([out.to_numpy().tolist(), isthmus.program.stats]))
"""


def test_entry_the_driver_died_on_is_dropped_by_the_next_process(dev, cache):
    value = int.from_bytes(os.urandom(2), "little") + 1
    key = _key(dev, FILL, value)
    assert program_cache.read(key) is not None

    def child(mode):
        return subprocess.run([sys.executable, "-c", CRASH_SCRIPT.format(dev=dev.id, src=FILL, value=value), mode],
                              capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env={**os.environ, "ISTHMUS_CACHE_DIR": str(cache)})

    crashed = child("crash")
    assert crashed.returncode != 0  # died inside the driver call, as PoCL does on a bad binary
    assert list(program_cache.entry_path(key).parent.glob(f"{key}.loading-*"))
    after = child("normal")
    assert after.returncode == 0, after.stderr[-3000:]
    result, stats = json.loads(after.stdout.strip().splitlines()[-1])
    assert result == [value] * 2
    assert stats["compiles"] == 1 and stats["disk_hits"] == 0  # not handed to the driver again
    assert not list(program_cache.entry_path(key).parent.glob(f"{key}.loading-*"))
    again = child("normal")  # the rebuilt entry is trusted again
    assert json.loads(again.stdout.strip().splitlines()[-1])[1]["disk_hits"] == 1
