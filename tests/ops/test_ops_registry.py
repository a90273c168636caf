"""isthmus.ops.registry and spec: every library op is declared once and found by the registry;
its spec's sample inputs, call and NumPy reference are what the tests, the tuner and the
benchmarks use, so each op is checked here from its spec alone (every dtype it lists, odd sizes)."""
import numpy as np
import pytest

import isthmus
from isthmus import ops
from isthmus.ops import registry
from isthmus.ops.spec import OpSpec
from isthmus.workloads import rel_error, tolerance

# odd problem sizes for each kind of problem: primes, 1, non-multiples of any work-group size
_ODD = {("n",): [{"n": 1}, {"n": 1009}, {"n": 65537}],
        ("rows", "cols"): [{"rows": 1, "cols": 7}, {"rows": 13, "cols": 257}, {"rows": 97, "cols": 1}],
        ("m", "n", "k"): [{"m": 1, "n": 5, "k": 3}, {"m": 17, "n": 33, "k": 65}]}
_CASES = [(name, dt, tuple(p.items())) for name, spec in registry.FAMILIES.items() for dt in spec.dtypes
          for p in _ODD[spec.problem]]


@pytest.mark.parametrize("name,dtype,problem", _CASES, ids=[f"{n}-{d}-{'x'.join(str(v) for _, v in p)}"
                                                             for n, d, p in _CASES])
def test_every_library_op_matches_its_reference_on_its_sample_inputs(dev, rng, name, dtype, problem):
    spec = registry.FAMILIES[name]
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    p = dict(problem)
    host = spec.inputs(p, np.dtype(isthmus.dtypes.lookup(dtype).np), rng)
    bufs = [dev.asarray(h) for h in host]
    out = spec.sample_call(*bufs).to_numpy()
    ref = spec.sample_expect(*host)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(out, ref)
    else:
        k = p.get("k", 1)
        wide = ref.dtype.itemsize == 2  # float16/bfloat16: judged in float16's units
        bound = tolerance(name, np.float16 if wide else ref.dtype, k) * (8 if ref.dtype.name == "bfloat16" else 1)
        assert rel_error(out.astype(np.float64), ref.astype(np.float64)) <= bound


def test_the_registry_finds_every_spec_file_and_ops_exposes_each_library_op():
    names = registry.names()
    for name, spec in registry.FAMILIES.items():
        assert isinstance(spec, OpSpec) and spec.library and registry.get(name) is spec
        assert getattr(ops, name) is spec.run and spec.run.__doc__  # the public function, documented
        assert spec.reference is not None and spec.inputs is not None and spec.moved is not None
    assert set(ops.__all__) == set(registry.FAMILIES) >= {"axpy", "sum", "max", "softmax", "transpose", "gemm",
                                                            "scale"}
    assert registry.get("gemm_mma") is not None and "gemm_mma" not in registry.FAMILIES  # a family of gemm
    assert names[:len(registry.FAMILIES)] == list(registry.FAMILIES)
    with pytest.raises(isthmus.InvalidArgumentError, match="the library has axpy"):
        registry.family("nope")


def test_users_kernels_join_the_same_registry_but_not_under_a_library_name():
    from isthmus.tune import declare

    src = "__kernel void r12_twice(const long n, __global float* x) { long i = get_global_id(0); if (i < n) x[i] *= 2; }"
    kw = dict(tunables={"WG": ((32, 64), 64)}, problem=("n",), grid=lambda p, c: ((-(-p["n"] // c["WG"]) * c["WG"],),
              (c["WG"],)), inputs=lambda p, dt, rng: (np.ones(p["n"], dt),), scalars=lambda p: (p["n"],),
              output=0, reference=lambda x: 2 * x)
    kernel = declare("r12_twice", src, **kw)
    assert registry.get("r12_twice") is kernel.family and "r12_twice" not in registry.FAMILIES
    assert "r12_twice" in registry.names()
    for taken in ("softmax", "gemm_mma"):
        with pytest.raises(ValueError, match="library kernel"):
            declare(taken, src.replace("r12_twice", taken), **kw)


def test_capture_and_bench_install_a_recorder_and_patch_nothing(dev, rng):
    from isthmus import bench

    x = dev.asarray(rng.standard_normal(1000).astype(np.float32))
    before = dict(vars(dev))
    with dev.capture() as graph:
        assert dev._recorder is not None and dict(vars(dev)).keys() == before.keys() | {"_recorder"}
        s = ops.sum(x)
    with bench.recording(dev) as rec:
        ops.scale(2.0, x, out=x)
    assert dev._recorder is None and "_launch" not in vars(dev) and len(rec) == 1
    graph.launch()
    assert s.to_numpy()[0] == pytest.approx(float(x.to_numpy().astype(np.float64).sum()), rel=1e-4)
    graph.close()


def test_registry_op_is_the_op_table_library_ops_and_users_registered_ones(dev, rng, monkeypatch):
    """``registry.op`` (what Java's op handles read): every library op, and a spec with a function
    that a user registers; not the library's internal families nor a tunable kernel without one."""
    for name, spec in registry.FAMILIES.items():
        assert registry.op(name) is spec
    for internal in ("gemm_mma", "nope"):
        with pytest.raises(isthmus.InvalidArgumentError, match="no library kernel .*the library has axpy"):
            registry.op(internal)

    def halve(x, out=None):
        return ops.scale(0.5, x, out=out)
    spec = OpSpec(name="r12jv_halve", source="<user>", entries=(), dtypes=("float32",), tunables=(), problem=("n",),
                  run=halve, library=False)
    monkeypatch.setitem(registry._registry, "r12jv_halve", spec)  # registered for this test only
    monkeypatch.setitem(registry._registry, "r12jv_nofn", spec.completed(name="r12jv_nofn", run=None))
    assert registry.op("r12jv_halve") is spec
    with pytest.raises(isthmus.InvalidArgumentError, match="registered ops: .*r12jv_halve"):
        registry.op("r12jv_nofn")
    host = rng.standard_normal(int(rng.integers(1, 999))).astype(np.float32)
    x = dev.asarray(host)
    np.testing.assert_allclose(dev.kernel("r12jv_halve")(x).to_numpy(), host * np.float32(0.5), rtol=1e-6)
