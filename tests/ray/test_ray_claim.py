"""Device claims on a node: one actor per OpenCL device, let go when the owner's process ends;
shard forms."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import isthmus
from isthmus.ray.shards import shard_arrays

CLAIMS = r"""
import os, signal, subprocess, sys, tempfile
tempfile.tempdir = sys.argv[1]                     # private claim folder for this test
from isthmus.ray import claim
claim.CLAIM_WAIT_S = 0.5
first, f1 = claim.choose("opencl", None, None, [])
second, f2 = claim.choose("auto", None, "cpu", [])
assert {first.id, second.id} == {"opencl:0", "opencl:1"}, (first.id, second.id)
try:
    claim.choose("opencl", None, None, [])
    raise SystemExit("a third claim succeeded")
except claim.DeviceActorError as e:
    assert "are owned by other isthmus device actors" in str(e), e
f1.close()                                         # the owner is gone: its device is free again
again, f3 = claim.choose("opencl", None, None, [])
assert again.id == first.id
f3.close()
# another process claims it and is killed: the kernel lets the claim go
child = subprocess.Popen([sys.executable, "-c",
    "import sys, tempfile, time; tempfile.tempdir = sys.argv[1]\n"
    "from isthmus.ray import claim\n"
    "d, f = claim.choose('opencl', None, None, []); print(d.id, flush=True); time.sleep(600)", sys.argv[1]],
    stdout=subprocess.PIPE, text=True)
taken = child.stdout.readline().strip()
assert taken == first.id, taken
try:
    claim.choose("opencl", None, None, [])
    raise SystemExit("claimed a device a live process holds")
except claim.DeviceActorError:
    pass
child.send_signal(signal.SIGKILL); child.wait()
assert claim.choose("opencl", None, None, [])[0].id == first.id
try:
    claim.choose("cuda", None, None, [])
    raise SystemExit("cuda without an assigned GPU was accepted")
except claim.DeviceActorError as e:
    assert "num_gpus" in str(e)
print("OK")
"""


def test_one_actor_per_device_and_claims_end_with_their_process(tmp_path):
    env = {**os.environ, "POCL_DEVICES": "pthread pthread"}
    proc = subprocess.run([sys.executable, "-c", CLAIMS, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_shard_forms(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    strided = rng.standard_normal((6, 8)).astype(np.float32)[:, ::2]
    (a,) = shard_arrays(x, 0)
    assert a is x
    b, c = shard_arrays([strided, np.arange(5)], 1)
    assert b.flags.c_contiguous and np.array_equal(b, strided) and np.array_equal(c, np.arange(5))
    with pytest.raises(isthmus.InvalidArgumentError, match="shard 2, array 1 is a list"):
        shard_arrays((x, [1, 2]), 2)


def test_arrow_shards_become_their_columns(rng):
    pa = pytest.importorskip("pyarrow")
    x = rng.standard_normal(9).astype(np.float32)
    n = np.arange(9, dtype=np.int32)
    table = pa.table({"x": x, "n": n})
    got = shard_arrays(table, 0)
    assert len(got) == 2 and np.array_equal(got[0], x) and np.array_equal(got[1], n)
    (only,) = shard_arrays(pa.array(x), 1)
    assert np.array_equal(only, x)
