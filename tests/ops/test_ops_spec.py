"""library/family.py: problem buckets, shape classes and the tuning lookup that keeps to a class,
and a family's rule over its defaults. A stand-in device; no kernels run here."""
from __future__ import annotations

import pytest

from isthmus.dtypes import lookup as dtype
from isthmus.ops.registry import OPS
from isthmus.ops.spec import problem_bucket, shape_class
from isthmus.tune import db as dbmod
from isthmus.tune.db import key_for

F32 = dtype("float32")
TRANSPOSE, SOFTMAX, GEMM, AXPY = (OPS[k] for k in ("transpose", "softmax", "gemm", "axpy"))


class FakeGpu:
    kind = "gpu"
    max_work_group_size = 1024
    local_mem_size = 49152
    local_mem_optin = compute_capability = None
    wgmma = False
    native_vector_width_float = 0
    name, driver, id = "Fake GPU", "1.0", "fake:0"

    def identity(self):
        return {"backend": "opencl", "vendor": "Fake", "name": self.name, "driver": self.driver, "platform": "p"}


def _cls(family, **problem):
    return shape_class(problem_bucket(family, problem))


def test_shape_classes():
    assert problem_bucket(TRANSPOSE, {"rows": 12345, "cols": 6789}) == (16384, 8192)
    assert _cls(TRANSPOSE, rows=8192, cols=8192) == _cls(TRANSPOSE, rows=12345, cols=6789) == "bb"
    assert _cls(SOFTMAX, rows=262144, cols=128) == "bs"       # attention-width rows
    assert _cls(SOFTMAX, rows=4096, cols=32000) == "bb/e"     # vocabulary-width rows
    assert _cls(SOFTMAX, rows=1024, cols=128256) == "bb/e"
    assert _cls(TRANSPOSE, rows=8 << 20, cols=1) == "bt" and _cls(TRANSPOSE, rows=1, cols=8 << 20) == "tb"
    assert _cls(GEMM, m=16, n=4096, k=4096) == "tbb" and _cls(GEMM, m=4096, n=4096, k=4096) == "bbb"
    assert _cls(GEMM, m=64, n=4096, k=4096) == "sbb"
    assert _cls(AXPY, n=10) == _cls(AXPY, n=1 << 24) == ""   # a length has no shape
    # a class is a function of the bucket: every size in a bucket has its bucket's class
    for rows, cols in [(513, 9000), (1000, 16), (17, 17), (8000, 1025)]:
        assert _cls(SOFTMAX, rows=rows, cols=cols) == shape_class(problem_bucket(SOFTMAX, {"rows": rows, "cols": cols}))


def _record(store, family, problem, params):
    store.record(key_for(family, FakeGpu(), "float32", problem), problem, params, 1.0, "ok")


def test_a_config_tuned_square_is_never_applied_to_another_class(db):
    """Tuned at 8192^2 only: used for 4096^2 and 12345x6789 (nearest bucket, same class), never for
    262144x128, (8M, 1) or 600x100000 (their own defaults), however near their buckets are."""
    tuned = {"TILE": 16, "BLOCK_ROWS": 2, "ORDER": 1}
    _record(db, TRANSPOSE, {"rows": 8192, "cols": 8192}, tuned)
    dbmod.forget()
    dev = FakeGpu()
    assert dbmod.explain(TRANSPOSE, dev, F32, {"rows": 8192, "cols": 8192}) == ("user database, exact", tuned)
    for near in ({"rows": 4096, "cols": 4096}, {"rows": 12345, "cols": 6789}, {"rows": 2000, "cols": 5000}):
        assert dbmod.explain(TRANSPOSE, dev, F32, near) == ("user database, nearest bucket", tuned), near
    for other in ({"rows": 262144, "cols": 128}, {"rows": 8 << 20, "cols": 1}, {"rows": 16, "cols": 8192},
                  {"rows": 600, "cols": 100000}):
        assert dbmod.explain(TRANSPOSE, dev, F32, other) is None, other


def test_each_class_finds_its_own_tuned_config(db):
    narrow = {"WG": 256, "RPG": 8, "VPT": 4, "CACHE": 1, "SPLIT": 1, "ROWLOOP": 0}
    square = {"WG": 512, "RPG": 1, "VPT": 8, "CACHE": 2, "SPLIT": 1, "ROWLOOP": 0}
    _record(db, SOFTMAX, {"rows": 262144, "cols": 128}, narrow)
    _record(db, SOFTMAX, {"rows": 8192, "cols": 8192}, square)
    dbmod.forget()
    dev = FakeGpu()
    assert dbmod.lookup(SOFTMAX, dev, F32, {"rows": 100000, "cols": 120}) == narrow
    assert dbmod.lookup(SOFTMAX, dev, F32, {"rows": 5000, "cols": 7000}) == square


def test_one_dimensional_problems_keep_the_nearest_bucket(db):
    _record(db, AXPY, {"n": 1000}, {"WG": 64, "VPT": 2})
    dbmod.forget()
    assert dbmod.explain(AXPY, FakeGpu(), F32, {"n": 1 << 24}) == ("user database, nearest bucket", {"WG": 64, "VPT": 2})


def test_rule_refines_the_defaults_per_bucket():
    dev = FakeGpu()
    assert SOFTMAX.defaults(dev)["RPG"] == 1  # no problem: the tunables' defaults
    assert SOFTMAX.defaults(dev, {"rows": 5, "cols": 100}, F32) == SOFTMAX.defaults(dev, {"rows": 9, "cols": 128}, F32)
    assert SOFTMAX.defaults(dev, {"rows": 5, "cols": 100}, F32)["RPG"] > 1
    assert TRANSPOSE.defaults(dev, {"rows": 5, "cols": 100}, F32) == TRANSPOSE.defaults(dev)  # no rule
