"""isthmus.ops.registry and spec: every library op is declared once and found by the registry;
its spec's sample inputs, call and NumPy reference are what the tests, the tuner and the
benchmarks use, so each op is checked here from its spec alone (every dtype it lists, odd sizes)."""
import dataclasses

import numpy as np
import pytest

import isthmus
from isthmus import knobs, ops
from isthmus.ops import docs, registry
from isthmus.ops.spec import OpSpec
from isthmus.ops.spec import Launch, Output, Scalar, Sizes, Tensor, Tunable, sample
from isthmus.ops.workloads import host_result, standard, workload

def _cases(specs):
    """(spec, dtype, odd problem) for every dtype of every spec: the odd problems are the spec's own
    (1, primes, non-multiples of any work-group size), in the spec's own vocabulary."""
    return [(spec, dt, tuple(p.items())) for spec in specs for dt in spec.dtypes for p in spec.sizes.odd]


_CASES = _cases(registry.OPS.values())


def _ids(cases):
    return [f"{s.name}-{d}-{'x'.join(str(v) for _, v in p)}" for s, d, p in cases]


def _check_sample(dev, rng, spec, dtype, problem):
    """The spec's sample call on its sample inputs against its reference in float64, within its
    tolerance (the error of its kind), into a new buffer and, where the op has one, into out=."""
    if not dev.supports(dtype):
        pytest.skip(f"{dev.id} has no {dtype}")
    p = dict(problem)
    host = spec.inputs(p, np.dtype(isthmus.dtypes.lookup(dtype).np), rng)
    ref = spec.sample_expect(*host, exact=True)
    results = [host_result(spec.sample_call(*[dev.asarray(h) for h in host]))]
    # (an op returning several buffers, read concatenated, takes no single poisoned out=)
    if spec.has_out and ref.ndim == len(host[0].shape):
        out = dev.asarray(np.full(ref.shape, 7, ref.dtype))  # poisoned
        results.append(spec.sample_call(*[dev.asarray(h) for h in host], out=out).to_numpy())
    for out in results:
        assert out.shape == ref.shape and out.dtype == ref.dtype
        if ref.dtype.kind in "iu":  # (equal, as the spec judges it: sample's token at a boundary either neighbour)
            assert spec.result_error(out, ref, tuple(host)) == 0, (out, ref)
            continue
        w = workload(spec, p, ref.dtype, host=tuple(host))
        wide = ref.dtype.itemsize == 2  # float16/bfloat16: judged in float16's units
        bound = w.tolerance(np.float16 if wide else ref.dtype) * (8 if ref.dtype.name == "bfloat16" else 1)
        assert w.error(out) <= bound


@pytest.mark.parametrize("spec,dtype,problem", _CASES, ids=_ids(_CASES))
def test_every_library_op_matches_its_reference_on_its_sample_inputs(dev, rng, spec, dtype, problem):
    _check_sample(dev, rng, spec, dtype, problem)


def test_the_registry_finds_every_spec_file_and_ops_exposes_each_library_op():
    names = registry.names()
    for name, spec in registry.OPS.items():
        assert isinstance(spec, OpSpec) and spec.library and registry.get(name) is spec
        assert getattr(ops, name) is spec.run and spec.run.__doc__  # the public function, documented
        assert spec.reference is not None and spec.inputs is not None and spec.moved is not None
    assert set(ops.__all__) == set(registry.OPS) >= {"axpy", "sum", "max", "softmax", "transpose", "gemm",
                                                            "scale"}
    assert registry.get("gemm_mma") is not None and "gemm_mma" not in registry.OPS  # a family of gemm
    assert names[:len(registry.OPS)] == list(registry.OPS)
    with pytest.raises(isthmus.InvalidArgumentError, match="the library has .*axpy"):
        registry.library_op("nope")


def test_users_kernels_join_the_same_registry_but_not_under_a_library_name():
    from isthmus.tune import declare

    src = "__kernel void r12_twice(const long n, __global float* x) { long i = get_global_id(0); if (i < n) x[i] *= 2; }"
    kw = dict(tunables={"WG": ((32, 64), 64)}, problem=("n",), grid=lambda p, c: ((-(-p["n"] // c["WG"]) * c["WG"],),
              (c["WG"],)), inputs=lambda p, dt, rng: (np.ones(p["n"], dt),), scalars=lambda p: (p["n"],),
              output=0, reference=lambda x: 2 * x)
    kernel = declare("r12_twice", src, **kw)
    assert registry.get("r12_twice") is kernel.family and "r12_twice" not in registry.OPS
    assert "r12_twice" in registry.names()
    for taken in ("softmax", "gemm_mma"):
        with pytest.raises(isthmus.InvalidArgumentError, match="is an op of the library"):
            declare(taken, src.replace("r12_twice", taken), **kw)


def test_capture_and_bench_install_a_recorder_and_patch_nothing(dev, rng):
    from isthmus.cli import bench

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
    for name, spec in registry.OPS.items():
        assert registry.op(name) is spec
    for internal in ("gemm_mma", "nope"):
        with pytest.raises(isthmus.InvalidArgumentError, match="no op .*the library has .*axpy"):
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
    np.testing.assert_allclose(dev.library("r12jv_halve")(x).to_numpy(), host * np.float32(0.5), rtol=1e-6)


# ---- a vocabulary no library op has: the op of attention's shape ---------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class _Text(OpSpec):
    """A spec whose kernel source is given as text (a test's own kernel, not a file of the library)."""
    text: str = ""

    def source_text(self) -> str:
        return (knobs.kernel_dir() / "dtype.h").read_text() + "\n" + self.text


_BHSD_SRC = """
__kernel void r25_bhsd(const int batch, const int heads, const int seq, const int head_dim, const T alpha,
                       __global const T* x, __global T* out) {
    long i = get_global_id(0);
    if (i < (long)batch * heads * seq * head_dim) out[i] = alpha * x[i];
}"""
_BHSD = _Text(
    name="r25_bhsd", source="<r25_bhsd>", entries=("r25_bhsd",), dtypes=("float32", "float64"), library=False,
    text=_BHSD_SRC, args=(Tensor("x", ndim=4), Scalar("alpha", default=1.0, sample=0.5)),
    problem={"batch": "x.shape[0]", "heads": "x.shape[1]", "seq": "x.shape[2]", "head_dim": "x.shape[3]"},
    out=Output(like="x"),
    launch=Launch("r25_bhsd", lambda p, c: ((-(-p["batch"] * p["heads"] * p["seq"] * p["head_dim"] // c["WG"])
                                             * c["WG"],), (c["WG"],)),
                  args=("batch:int", "heads:int", "seq:int", "head_dim:int", "alpha", "x", "out")),
    tunables=(Tunable("WG", (16, 32, 64), 32),), restrictions=("WG <= max_work_group_size",),
    reference=lambda xp, x, alpha=1.0: (alpha * x.astype(xp.float64)).astype(x.dtype),
    inputs=lambda p, dt, rng: (sample(rng, (p["batch"], p["heads"], p["seq"], p["head_dim"]), dt),),
    moved=lambda p, size: 2 * p["batch"] * p["heads"] * p["seq"] * p["head_dim"] * size,
    sizes=Sizes(gpu={"batch": 4, "heads": 32, "seq": 1024, "head_dim": 128},
                cpu={"batch": 2, "heads": 8, "seq": 256, "head_dim": 64},
                quick={"batch": 1, "heads": 4, "seq": 64, "head_dim": 32},
                tiny={"batch": 1, "heads": 2, "seq": 3, "head_dim": 8},
                odd=({"batch": 1, "heads": 1, "seq": 1, "head_dim": 1},
                     {"batch": 3, "heads": 5, "seq": 7, "head_dim": 11})),
)
_BHSD_CASES = _cases([_BHSD])


@pytest.mark.parametrize("spec,dtype,problem", _BHSD_CASES, ids=_ids(_BHSD_CASES))
def test_a_four_name_vocabulary_goes_through_the_tests_parametrization(dev, rng, spec, dtype, problem):
    _check_sample(dev, rng, spec, dtype, problem)


def test_a_four_name_vocabulary_goes_through_workloads_and_bench(dev):
    from isthmus.cli import bench

    (w,) = standard("tiny", [_BHSD])
    assert w.problem == {"batch": 1, "heads": 2, "seq": 3, "head_dim": 8} and w.label == "r25_bhsd 1x2x3x8"
    (row,) = bench.overhead(dev, calls=3, rounds=1, specs=[_BHSD])
    assert row["op"] == "r25_bhsd" and row["launches"] == 1 and "isthmus_out_us" in row and not row["in_place"]
    result = bench.run(dev, quick=True, specs=[_BHSD])
    (k,) = result["kernels"]
    assert k["correct"] and k["unit"] == "GB/s" and result["sizes"] == {"r25_bhsd": _BHSD.sizes.quick}
    assert "r25_bhsd" in bench.markdown(result)


def test_a_declared_op_checks_its_arguments_and_links(dev):
    x = dev.zeros((2, 3, 4, 5), np.float32)
    assert _BHSD.run(x).shape == (2, 3, 4, 5) and _BHSD.run(x, alpha=2.0, out=dev.zeros((2, 3, 4, 5), np.float32))
    for call, match in [(lambda: _BHSD.run(dev.zeros((2, 3), np.float32)), "x must be 4-D"),
                        (lambda: _BHSD.run(x, 1.0, x), "input's memory|shares memory"),
                        (lambda: _BHSD.run(x, "a"), "r25_bhsd: alpha must be a real number, got str"),
                        (lambda: _BHSD.run(np.zeros((1, 1, 1, 1), np.float32)), "must be an isthmus Buffer")]:
        with pytest.raises(isthmus.InvalidArgumentError, match=match):
            call()


# ---- optional tensors, a tensor written in place besides the result, a scalar's range ------------
_ACC_SRC = """
__kernel void r27_acc(const long n, const T alpha, __global const T* x, __global T* acc, __global T* out) {
    long i = get_global_id(0);
    if (i >= n) return;
#if HAS_ACC
    acc[i] += x[i];
#endif
    out[i] = alpha * x[i];
}"""
_ACC = _Text(
    name="r27_acc", source="<r27_acc>", entries=("r27_acc",), dtypes=("float32",), library=False, text=_ACC_SRC,
    args=(Tensor("x", min_ndim=1), Scalar("alpha", default=1.0, minimum=0.0), Tensor("acc", shape="x", optional=True,
                                                                                       written=True)),
    problem={"n": "x.size"}, out=Output(like="x", alias=True),
    launch=Launch("r27_acc", lambda p, c: ((-(-p["n"] // c["WG"]) * c["WG"],), (c["WG"],)),
                  args=("n:long", "alpha", "x", "acc", "out")),
    tunables=(Tunable("WG", (16, 32), 16),), reference=lambda xp, x, alpha=1.0, acc=None: alpha * x,
    inputs=lambda p, dt, rng: (sample(rng, p["n"], dt),))


def test_an_optional_tensor_written_in_place_compiles_in_when_given_and_is_checked(dev, rng):
    """acc=None: the kernel built with HAS_ACC=0 (x stands in at the launch, never read); given: acc
    += x in place besides the result, acc disjoint from x and from out; alpha below its minimum, NaN
    or inf refused naming it; a 0-d x refused by its least rank."""
    host = rng.standard_normal(1000).astype(np.float32)
    x = dev.asarray(host)
    np.testing.assert_array_equal(_ACC.run(x, 2.0).to_numpy(), 2 * host)
    acc_host = rng.standard_normal(1000).astype(np.float32)
    acc = dev.asarray(acc_host)
    out = dev.asarray(np.full(1000, np.nan, np.float32))
    assert _ACC.run(x, 0.5, acc, out=out) is out
    np.testing.assert_array_equal(out.to_numpy(), 0.5 * host)
    np.testing.assert_array_equal(acc.to_numpy(), acc_host + host)
    assert _ACC.call_defines() == {"HAS_ACC": (0, 1)} and "acc: Buffer | None = ..." in docs.signature(_ACC)
    assert _ACC._sample_args([x]) == [x, 1.0, None]
    for call, match in [(lambda: _ACC.run(x, 1.0, x), "acc shares memory with x"),
                        (lambda: _ACC.run(x, 1.0, acc, out=acc), "out shares memory with acc"),
                        (lambda: _ACC.run(x, 1.0, dev.zeros(999, np.float32)), r"acc has shape \(999,\); it must have x's shape"),
                        (lambda: _ACC.run(x, 1.0, dev.zeros(1000, np.float64)), "acc has dtype float64"),
                        (lambda: _ACC.run(x, -1.0), r"alpha = -1 is out of range; it must be a finite number >= 0"),
                        (lambda: _ACC.run(x, float("nan")), "alpha = nan is out of range"),
                        (lambda: _ACC.run(x, float("inf")), "alpha = inf is out of range"),
                        (lambda: _ACC.run(dev.zeros((), np.float32)), "x must have at least 1 dimension")]:
        with pytest.raises(isthmus.InvalidArgumentError, match=match):
            call()
    np.testing.assert_array_equal(acc.to_numpy(), acc_host + host)  # nothing refused wrote anything
