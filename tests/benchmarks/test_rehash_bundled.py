"""benchmarks/tools/rehash_bundled: a shipped config keyed to an older .cl file (passed as the old
source) moves to the current fingerprint; one keyed to anything else stays stale."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the suite is the checkout's benchmarks/ package, not part of the wheel

from benchmarks.tools.rehash_bundled import rehash  # noqa: E402
from isthmus import knobs  # noqa: E402
from isthmus.ops.specs.reduce import SUM  # noqa: E402
from isthmus.tune.db import code_of, fingerprint  # noqa: E402


def _entry(source_hash: str) -> dict:
    return {"kernel": "sum", "dtype": "float32", "source_hash": source_hash, "options": fingerprint(SUM, "float32")[1]}


def test_an_old_source_carries_its_configs_to_the_current_one():
    header = (knobs.kernel_dir() / "dtype.h").read_text()
    old_cl = (knobs.kernel_dir() / "reduce.cl").read_text() + "\n__kernel void reduce_gone(__global float* x) { }\n"
    old_hash = hashlib.sha256(code_of(header + "\n" + old_cl).encode()).hexdigest()
    entries = [_entry(old_hash), _entry("0" * 64)]
    assert rehash([dict(e) for e in entries], {}) == 0  # without the old .cl nothing matches
    assert rehash(entries, {"reduce.cl": old_cl}) == 1
    assert entries[0]["source_hash"] == fingerprint(SUM, "float32")[0]
    assert entries[1]["source_hash"] == "0" * 64  # stale for another reason: left as it was


def test_a_shared_header_is_part_of_the_source_and_an_old_copy_carries_it():
    from isthmus.ops.spec import kernel_source
    from isthmus.ops.specs.gemm_mma import SPEC as GEMM_MMA

    text = kernel_source("gemm_mma.cl")
    assert not [ln for ln in text.splitlines() if ln.strip().startswith("#include")]
    assert "static inline void mma16816(" in text
    assert text.count("#define ISTHMUS_MMA_H") == 1
    old_h = (knobs.kernel_dir() / "mma.h").read_text() + "\n#define MMA_GONE 1\n"
    old_hash = hashlib.sha256(code_of(kernel_source(
        "gemm_mma.cl", lambda f: old_h if f == "mma.h" else (knobs.kernel_dir() / f).read_text())).encode()).hexdigest()
    assert old_hash != fingerprint(GEMM_MMA, "bfloat16")[0]  # the header is keyed
    entry = {"kernel": "gemm_mma", "dtype": "bfloat16", "source_hash": old_hash,
             "options": fingerprint(GEMM_MMA, "bfloat16")[1]}
    assert rehash([entry], {"mma.h": old_h}) == 1
    assert entry["source_hash"] == fingerprint(GEMM_MMA, "bfloat16")[0]
