"""The tuning fallback policy (tune/lookup.py): exact device -> same model, other driver -> same
architecture -> defaults, user's database before the bundled one, restrictions re-checked for the
device at hand. Devices other than this machine's are stand-ins (an H100 is not reachable here);
the bundled configs and this machine's PoCL device are real."""
from __future__ import annotations

import json

import pytest

from isthmus.dtypes import lookup as dtype
from isthmus.ops.registry import OPS
from isthmus.tune import db as dbmod
from isthmus.tune import lookup
from isthmus.tune.db import Database, key_for

AXPY, SOFTMAX = OPS["axpy"], OPS["softmax"]
F32 = dtype("float32")


class StandIn:
    """A device as the lookup sees it: identity, kind and limits (plus what CUDA/OpenCL add)."""

    local_mem_optin = compute_capability = None
    wgmma = False
    native_vector_width_float = 0
    compute_units = 0  # unknown (a test that needs a core count passes one)

    def __init__(self, name, backend="opencl", vendor="GenuineIntel", driver="1.0", kind="cpu", wg=4096,
                 local=1 << 20, **extra):
        self.name, self.backend, self.vendor, self.driver, self.kind = name, backend, vendor, driver, kind
        self.max_work_group_size, self.local_mem_size = wg, local
        self.id = f"{backend}:{name}:{driver}"
        self.__dict__.update(extra)

    def identity(self):
        return {"backend": self.backend, "vendor": self.vendor, "name": self.name, "driver": self.driver,
                "platform": "p"}


@pytest.fixture
def db(tmp_path, monkeypatch):
    """An empty user database and an empty bundled one (each test records what it needs)."""
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    monkeypatch.setattr(dbmod, "_bundled", Database.memory())
    yield dbmod.user()
    dbmod.reset()


def _record(store, dev, n, params, ms=1.0, family=AXPY):
    store.record(key_for(family, dev, "float32", {"n": n}), {"n": n}, params, ms, "ok")


@pytest.mark.parametrize("backend,vendor,name,arch", [
    ("opencl", "AuthenticAMD", "pthread-skylake-avx512-AMD EPYC", "x86-64-simd512"),
    ("opencl", "GenuineIntel", "pthread-skylake-avx512-Intel(R) Xeon(R) Processor", "x86-64-simd512"),
    ("opencl", "AuthenticAMD", "cpu-znver4-AMD EPYC 9654 96-Core Processor", "x86-64-simd512"),
    ("opencl", "GenuineIntel", "cpu-haswell-Intel(R) Core(TM) i7-4770", "x86-64-simd256"),
    ("opencl", "AuthenticAMD", "pthread-znver3-AMD Ryzen 9 5950X", "x86-64-simd256"),
    ("opencl", "GenuineIntel", "pthread-x86-64-v3-Intel", "x86-64-simd256"),
    ("opencl", "GenuineIntel", "pthread-x86-64-Intel", "x86-64-simd128"),
    ("cuda", "NVIDIA Corporation", "NVIDIA H200", "nvidia-sm90"),
    ("cuda", "NVIDIA Corporation", "NVIDIA H100 80GB HBM3", "nvidia-sm90"),
    ("opencl", "NVIDIA Corporation", "NVIDIA GH200 480GB", "nvidia-sm90"),
    ("cuda", "NVIDIA Corporation", "NVIDIA A100-SXM4-80GB", "nvidia-sm80"),
    ("cuda", "NVIDIA Corporation", "NVIDIA A10G", "nvidia-sm86"),
    ("cuda", "NVIDIA Corporation", "NVIDIA GeForce RTX 4090", "nvidia-sm89"),
    ("cuda", "NVIDIA Corporation", "Tesla V100-SXM2-16GB", "nvidia-sm70"),
    ("opencl", "Advanced Micro Devices, Inc.", "gfx90a:sramecc+:xnack-", "amd-gfx90a"),
    ("cuda", "NVIDIA Corporation", "Some Future GPU", None),
    ("opencl", "Intel(R) Corporation", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", None),
    ("opencl", "Fake", "pthread-generic-Fake", None),
])
def test_architecture_classes(backend, vendor, name, arch):
    assert lookup.arch_of(backend, vendor, name) == arch


def test_device_at_hand_knows_more_than_its_name():
    assert lookup.device_arch(StandIn("NVIDIA Future X", backend="cuda", vendor="NVIDIA Corporation", kind="gpu",
                                      compute_capability="90")) == "nvidia-sm90"
    intel_runtime = StandIn("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", native_vector_width_float=16)
    import platform

    expected = "x86-64-simd512" if platform.machine().lower() in ("x86_64", "amd64") else None
    assert lookup.device_arch(intel_runtime) == expected


def test_fallback_order_exact_then_other_driver_then_architecture_then_defaults(db):
    here = StandIn("pthread-skylake-avx512-Intel(R) Xeon(R) Processor", driver="3.1")
    same_model = StandIn(here.name, driver="5.0")
    same_arch = StandIn("pthread-znver4-AMD EPYC 9654", vendor="AuthenticAMD")
    same_arch_same_vendor = StandIn("pthread-icelake-server-Intel(R) Xeon(R) Platinum")
    other_arch = StandIn("pthread-haswell-Intel(R) Core(TM) i7")
    _record(db, other_arch, 1 << 20, {"WG": 512, "VPT": 8})
    _record(db, same_arch, 1 << 20, {"WG": 128, "VPT": 2})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == (
        "user database, same architecture (x86-64-simd512)", {"VPT": 2, "WG": 128})
    _record(db, same_arch_same_vendor, 1 << 10, {"WG": 64, "VPT": 4})  # same vendor wins over a nearer bucket
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20})[1] == {"VPT": 4, "WG": 64}
    _record(db, same_model, 1 << 20, {"WG": 256, "VPT": 1})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == ("user database, other driver", {"VPT": 1, "WG": 256})
    _record(db, here, 1 << 12, {"WG": 512, "VPT": 2})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == ("user database, nearest bucket", {"VPT": 2, "WG": 512})
    _record(db, here, 1 << 20, {"WG": 1024, "VPT": 1})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == ("user database, exact", {"VPT": 1, "WG": 1024})
    # a device of no known architecture, or of another one, gets the defaults
    assert dbmod.explain(AXPY, StandIn("pthread-generic-Fake", vendor="Fake"), F32, {"n": 1 << 20}) is None
    assert dbmod.explain(AXPY, StandIn("pthread-nehalem-Intel"), F32, {"n": 1 << 20}) is None


def test_the_users_own_device_entries_come_before_bundled_ones_and_bundled_before_the_architecture(db):
    here = StandIn("pthread-skylake-avx512-Intel(R) Xeon(R) Processor")
    mate = StandIn("pthread-cascadelake-Intel(R) Xeon(R) Gold")
    _record(db, mate, 1 << 20, {"WG": 128, "VPT": 2})            # user's, same architecture
    _record(dbmod.bundled(), here, 1 << 20, {"WG": 64, "VPT": 8})  # bundled, this very device
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == ("bundled database, exact", {"VPT": 8, "WG": 64})
    dbmod.bundled().clear()
    _record(dbmod.bundled(), mate, 1 << 20, {"WG": 256, "VPT": 4})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20})[0] == "user database, same architecture (x86-64-simd512)"
    db.clear()
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == (
        "bundled database, same architecture (x86-64-simd512)", {"VPT": 4, "WG": 256})


def test_architecture_candidates_are_rechecked_for_this_device(db):
    here = StandIn("NVIDIA H100 80GB HBM3", backend="cuda", vendor="NVIDIA Corporation", kind="gpu", wg=256,
                   local=48 << 10, compute_capability="90")
    h200 = StandIn("NVIDIA H200", backend="cuda", vendor="NVIDIA Corporation", kind="gpu", wg=1024)
    gh200 = StandIn("NVIDIA GH200 480GB", backend="cuda", vendor="NVIDIA Corporation", kind="gpu", wg=1024)
    _record(db, h200, 1 << 20, {"WG": 1024, "VPT": 4})  # nearest, but too big a work-group here
    _record(db, gh200, 1 << 16, {"WG": 256, "VPT": 2})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) == (
        "user database, same architecture (nvidia-sm90)", {"VPT": 2, "WG": 256})
    db.clear()
    _record(db, h200, 1 << 20, {"WG": 1024, "VPT": 4})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) is None  # nothing that fits: the defaults
    # the same model on another backend is another compiler: no fallback across backends
    db.clear()
    _record(db, StandIn("NVIDIA H200", vendor="NVIDIA Corporation", kind="gpu"), 1 << 20, {"WG": 128, "VPT": 4})
    assert dbmod.explain(AXPY, here, F32, {"n": 1 << 20}) is None


def test_bundled_h200_configs_reach_another_hopper_gpu(tmp_path, monkeypatch):
    """The shipped CUDA configs were tuned on an H200; an H100 (same sm_90) gets them."""
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    try:
        h100 = StandIn("NVIDIA H100 80GB HBM3", backend="cuda", vendor="NVIDIA Corporation", driver="12.4",
                       kind="gpu", wg=1024, local=48 << 10, compute_capability="90")
        shipped = {e["kernel"]: e for e in json.loads(
            (dbmod.Path(dbmod.__file__).parent / "bundled" / "cuda-h200.json").read_text())["entries"]
            if e["dtype"] == "float32" and e["kernel"] == "softmax"}
        entry = shipped["softmax"]
        problem = dict(entry["bucket"])
        if dbmod.fingerprint(SOFTMAX, "float32") != (entry["source_hash"], entry["options"]):
            pytest.skip("the bundled softmax config is for an older softmax source")
        where, params = dbmod.explain(SOFTMAX, h100, F32, problem)
        assert where == "bundled database, same architecture (nvidia-sm90)"
        assert params == entry["params"]
        a100 = StandIn("NVIDIA A100-SXM4-80GB", backend="cuda", vendor="NVIDIA Corporation", kind="gpu", wg=1024,
                       local=48 << 10, compute_capability="80")
        assert dbmod.explain(SOFTMAX, a100, F32, problem) is None
    finally:
        dbmod.reset()


def test_bundled_x86_configs_reach_this_machines_pocl_cpu(dev, tmp_path, monkeypatch):
    """The shipped PoCL configs (tuned on an AMD EPYC and on an Intel Xeon, both AVX-512, 2 cores each)
    reach any AVX-512 x86-64 PoCL device whose core count fits theirs (lookup.CORE_RATIO): its own
    model's exactly, another model's by architecture where its own model has none for that kernel;
    every one valid here. A CPU with many more cores (the GPU machine's 16) gets none of them."""
    if lookup.device_arch(dev) != "x86-64-simd512" or "skylake-avx512-AMD EPYC" in dev.name:
        pytest.skip(f"{dev.id} ({dev.name}) is not another AVX-512 x86-64 CPU")
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    try:
        doc = json.loads((dbmod.Path(dbmod.__file__).parent / "bundled" / "opencl-pocl-x86_64.json").read_text())
        entries, cores = doc["entries"], doc["cores"]
        current = [e for e in entries
                   if dbmod.fingerprint(OPS[e["kernel"]], e["dtype"]) == (e["source_hash"], e["options"])]
        here = dev.compute_units
        fit = {name: max(here, n) <= lookup.CORE_RATIO * min(here, n) for name, n in cores.items()}
        mine = {(e["kernel"], e["dtype"]) for e in current if e["device"]["name"] == dev.name}
        reached = 0
        for e in current:  # (a stale entry, for an older kernel source, is never used)
            fam = OPS[e["kernel"]]
            found = dbmod.explain(fam, dev, dtype(e["dtype"]), dict(e["bucket"]))
            if not fit[e["device"]["name"]]:  # tuned on too few cores for this CPU: the defaults instead
                assert found is None or not found[0].startswith("bundled database"), (e["device"], here, found)
                continue
            assert found is not None and found[0].startswith("bundled database")
            if e["device"]["name"] != dev.name and (e["kernel"], e["dtype"]) not in mine:
                assert found[0] == "bundled database, same architecture (x86-64-simd512)"
            assert fam.is_valid(found[1], dev, dict(e["bucket"]), dtype(e["dtype"]))
            reached += 1
        assert reached > 0 or not any(fit.values())
    finally:
        dbmod.reset()


@pytest.mark.parametrize("kernel", ["sum", "max"])
def test_bundled_reduce_configs_are_found_for_the_devices_they_name(tuning_db, kernel):
    """The shipped configs are keyed by their kernel's code: removing the unused reduce_next from
    reduce.cl changed no launched kernel, and the sum/max entries were re-keyed with it
    (benchmarks/tools/rehash_bundled.py), so each is still found, exactly, for the device it names."""
    entries = [e for f in sorted((dbmod.Path(dbmod.__file__).parent / "bundled").glob("*.json"))
               for e in json.loads(f.read_text())["entries"] if e["kernel"] == kernel]
    assert {e["device"]["backend"] for e in entries} == {"cuda", "opencl"}
    for e in entries:
        d = e["device"]
        dev = StandIn(d["name"], backend=d["backend"], vendor=d["vendor"], driver=d["driver"],
                      kind="gpu" if "NVIDIA" in d["vendor"] else "cpu", wg=1024, local=48 << 10)
        assert dbmod.explain(OPS[kernel], dev, dtype(e["dtype"]), dict(e["bucket"])) == (
            "bundled database, exact", e["params"]), e


def _shipped(name: str) -> list[dict]:
    return json.loads((dbmod.Path(dbmod.__file__).parent / "bundled" / name).read_text())["entries"]


def test_a_cpu_of_another_name_gets_its_class_configs_and_another_class_does_not(tmp_path, monkeypatch):
    """Issue 26, item 12: the shipped PoCL configs are per CPU class (SIMD width and core count), so
    an AVX2 AMD EPYC, whose name no shipped entry has, gets the AVX2 class's configs; an AVX-512 CPU
    gets its own exact entries first, then its class's (never the AVX2 ones); an SSE-only CPU, or
    one with 32x the cores they were tuned on, gets none."""
    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    try:
        avx2 = [e for e in _shipped("opencl-pocl-x86-64-avx2.json") if e["dtype"] == "float32"]
        assert {e["kernel"] for e in avx2} >= {"axpy", "sum", "max", "softmax", "transpose", "gemm"}
        assert {lookup.arch_of("opencl", e["device"]["vendor"], e["device"]["name"]) for e in avx2} == {
            "x86-64-simd256"}
        epyc = StandIn("pthread-znver3-AMD EPYC 7B13 64-Core Processor", vendor="AuthenticAMD", driver="3.1+debian",
                       compute_units=8)
        # the shipped configs were tuned on 2 cores: a 64-core CPU of the class uses its own or the defaults
        big = StandIn(epyc.name, vendor="AuthenticAMD", driver="3.1+debian", compute_units=64)
        avx512 = StandIn("pthread-skylake-avx512-AMD EPYC", vendor="AuthenticAMD", driver="3.1+debian")
        sse = StandIn("pthread-nehalem-Intel(R) Xeon(R) CPU X5650", driver="3.1+debian")
        simd512 = {json.dumps(e["params"], sort_keys=True) for e in _shipped("opencl-pocl-x86_64.json")}
        for e in avx2:
            fam, problem = OPS[e["kernel"]], dict(e["bucket"])
            assert dbmod.explain(fam, epyc, F32, problem) == (
                "bundled database, same architecture (x86-64-simd256)", e["params"]), e
            assert dbmod.explain(fam, sse, F32, problem) is None
            assert dbmod.explain(fam, big, F32, problem) is None
            found = dbmod.explain(fam, avx512, F32, problem)
            if found is not None:  # its own entries, or the AVX-512 class's: never the AVX2 ones
                assert found[0] in ("bundled database, exact", "bundled database, nearest bucket",
                                    "bundled database, same architecture (x86-64-simd512)"), found
                assert json.dumps(found[1], sort_keys=True) in simd512
        # an exact entry of this device still wins over its class
        mine = next(e for e in _shipped("opencl-pocl-x86_64.json") if e["device"]["name"] == avx512.name)
        assert dbmod.explain(OPS[mine["kernel"]], avx512, F32, dict(mine["bucket"])) == (
            "bundled database, exact", mine["params"])
    finally:
        dbmod.reset()


def test_a_cpu_config_applies_only_to_cpus_of_a_similar_core_count(db):
    tuned = StandIn("pthread-skylake-avx512-Intel(R) Xeon(R) Processor")
    _record(dbmod.bundled(), tuned, 1 << 20, {"WG": 64, "VPT": 8})
    dbmod.bundled().tuned_cores[tuned.name] = 2
    for cores, used in ((1, True), (2, True), (8, True), (9, False), (64, False), (None, True)):
        same_name = StandIn(tuned.name, compute_units=cores)  # a cloud CPU name says nothing of the cores
        mate = StandIn("pthread-icelake-server-Intel(R) Xeon(R) Platinum", compute_units=cores)
        for dev in (same_name, mate):
            found = dbmod.explain(AXPY, dev, F32, {"n": 1 << 20})
            assert (found is not None) == used, (cores, dev.name, found)
    # the user's own rows say nothing of their cores: they are used as before
    _record(db, tuned, 1 << 20, {"WG": 128, "VPT": 2})
    assert dbmod.explain(AXPY, StandIn(tuned.name, compute_units=64), F32, {"n": 1 << 20}) == (
        "user database, exact", {"VPT": 2, "WG": 128})
