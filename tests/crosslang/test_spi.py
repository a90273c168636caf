"""The Java SPI (io.isthmus.spi) and its Python side (isthmus.java.spi): every interface method
has its Python implementation, and a library op from Java crosses the bridge once."""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

# Interfaces that Java implements and Python calls (callbacks), so they have no Python class.
JAVA_IMPLEMENTED = {"io.isthmus.spi.KernelSpace"}


def _spi_interfaces(jvm) -> list[str]:
    from isthmus.java.jvm import packaged_jar

    with zipfile.ZipFile(packaged_jar()) as z:
        names = [n[:-len(".class")].replace("/", ".") for n in z.namelist()
                 if n.startswith("io/isthmus/spi/") and n.endswith(".class") and "$" not in n]
    return sorted(n for n in names if not n.endswith("package-info") and jvm.JClass(n).class_.isInterface())


def _implementations() -> dict[str, type]:
    import isthmus.java.spi as spi
    import isthmus.java.spi.tuning  # noqa: F401 - registers TuneRun
    from isthmus.java.spi.proxy import IMPLEMENTATIONS

    for info in pkgutil.iter_modules(spi.__path__):
        importlib.import_module(f"{spi.__name__}.{info.name}")
    return IMPLEMENTATIONS


def test_every_spi_method_has_its_python_implementation(jvm):
    impls = _implementations()
    interfaces = _spi_interfaces(jvm)
    assert "io.isthmus.spi.Runtime" in interfaces and "io.isthmus.spi.OpHandle" in interfaces
    problems = []
    for name in interfaces:
        if name in JAVA_IMPLEMENTED:
            assert name not in impls, f"{name} is implemented in Java; remove it from JAVA_IMPLEMENTED or Python"
            continue
        if not impls.get(name):
            problems.append(f"{name}: no Python class (isthmus.java.spi.proxy.implements)")
        methods = {str(m.getName()) for m in jvm.JClass(name).class_.getMethods()}
        for cls in impls.get(name, ()):
            base = cls.__mro__[1]  # the class as written (JPype's deferred proxy derives from it)
            mapped = {k for k, v in vars(base).items() if getattr(v, "__isthmus_spi__", False)}
            problems += [f"{base.__name__}.{m}: {name} method with no Python method mapped through spi()"
                         for m in sorted(methods - mapped)]
            problems += [f"{base.__name__}.{m}: no such method in {name}" for m in sorted(mapped - methods)]
    assert not problems, "\n".join(problems)


def test_java_strategies_are_pythons(J):
    from isthmus.tune.strategies import NAMES

    assert sorted(str(s.pythonName()) for s in J.Strategy.values()) == sorted(NAMES)


@pytest.fixture
def crossings(jvm, monkeypatch):
    """Counts the Java -> Python calls of every SPI method (the proxies look their methods up by name)."""
    impls = _implementations()
    counts: dict[str, int] = {}
    for cls in {c for classes in impls.values() for c in classes}:
        base = cls.__mro__[1]
        for k, v in list(vars(base).items()):
            if getattr(v, "__isthmus_spi__", False):
                def counted(*args, _f=v, _k=f"{base.__name__}.{k}"):
                    counts[_k] = counts.get(_k, 0) + 1
                    return _f(*args)
                counted.__joverride__ = v.__joverride__
                monkeypatch.setattr(base, k, counted)
    return counts


def test_each_library_op_crosses_once(jvm, J, dev, crossings):
    rng = np.random.default_rng()
    rows, cols = 3, int(rng.integers(5, 40))
    jdev = J.Isthmus.get().device(dev.id)
    host = rng.standard_normal(rows * cols).astype(np.float32)
    x = jdev.fromArray(jvm.JArray(jvm.JFloat)(host), rows, cols)
    out = jdev.allocate(J.DType.FLOAT32, rows, cols)
    try:
        # each op's handle is resolved on its first use in the session (Runtime.library), not counted here
        J.Ops.softmax(x).close()
        J.Ops.axpy(0.0, x, out)
        J.Ops.gemm(x, x, J.Transpose.B).close()
        crossings.clear()
        with J.Ops.softmax(x) as p:
            # before: Runtime.softmax, BufferHandle.shape, .dtype; then Runtime.op (name and Object[])
            assert crossings == {"OpHandle.call4": 1}, crossings
            assert list(p.shape()) == [rows, cols] and str(p.dtype()) == "FLOAT32"
            want = np.exp(host.reshape(rows, cols) - host.reshape(rows, cols).max(1, keepdims=True))
            np.testing.assert_allclose(np.array(p.toFloatArray()).reshape(rows, cols),
                                       want / want.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
        crossings.clear()
        assert J.Ops.softmax(x, out).equals(out)
        J.Ops.axpy(0.5, x, out)
        J.Ops.gemm(x, x, J.Transpose.B).close()
        assert crossings == {"OpHandle.call4": 2, "OpHandle.call": 1, "BufferHandle.close": 1}, crossings
    finally:
        x.close()
        out.close()


def test_an_in_place_op_as_the_first_op_of_a_process(jvm, J, dev, rng):
    """The OpResult class is looked up on first need, also when the first op Java runs updates its
    argument (axpy) and so never builds a new result."""
    from isthmus.java.spi import calls

    calls._op_result_class.cache_clear()  # as in a fresh process
    n = int(rng.integers(1, 999))
    xs, ys = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    jdev = J.Isthmus.get().device(dev.id)
    x, y = jdev.fromArray(jvm.JArray(jvm.JFloat)(xs)), jdev.fromArray(jvm.JArray(jvm.JFloat)(ys))
    try:
        J.Ops.axpy(2.0, x, y)
        np.testing.assert_allclose(np.array(y.toFloatArray()), 2 * xs + ys, rtol=1e-6, atol=1e-6)
    finally:
        x.close()
        y.close()


@pytest.mark.parametrize("name", ["softmx", "Buffer", "_softmax", "annotations", "gemm_mma"])
def test_runtime_op_names_only_registered_ops(jvm, J, dev, name):
    from isthmus.java import jvm as hosted

    x = J.Isthmus.get().device(dev.id).fromArray(jvm.JArray(jvm.JFloat)([1.0, 2.0]))
    try:
        args = jvm.JArray(jvm.JObject)([J.Interop.handle(x)])
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException")) as info:
            hosted._runtime.op(name, args, None, None)
        assert "the library has" in str(info.value.getMessage()) and "softmax" in str(info.value.getMessage())
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException")):
            J.Ops.call(name, x)
    finally:
        x.close()


# ---- an op a user registers in Python is an op from Java too ------------------------------------
_ADDC = """__kernel void addc(__global const float* x, __global float* y, const float c, const int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = x[i] + c;
}"""


def _addc(sign: float):
    """A user's op: out = x + sign * c, with its own kernel (not a library one)."""
    import isthmus

    def addc(c, x, out=None):
        y = x.device.empty(x.shape, x.dtype) if out is None else out
        x.device.compile(_ADDC, "addc")(x, y, np.float32(sign * c), np.int32(x.size),
                                       config=isthmus.LaunchConfig((x.size,)))
        return y
    return addc


@pytest.fixture
def user_op():
    """Registers a user's op under a fresh name (the Java side keeps handles by name for the whole
    session); yields (name, register) to register it again."""
    import uuid

    from isthmus.ops import registry
    from isthmus.ops.spec import OpSpec

    name = f"addc_{uuid.uuid4().hex[:8]}"

    def register(sign: float):
        registry.register(OpSpec(name=name, source="<user>", entries=("addc",), dtypes=("float32",), tunables=(),
                                 problem=("n",), run=_addc(sign), library=False))
    register(1.0)
    yield name, register
    registry._registry.pop(name, None)  # noqa: SLF001 - no public unregister: the test's op leaves with it


def test_an_op_registered_in_python_is_callable_from_java(jvm, J, dev, rng, user_op, crossings):
    name, register = user_op
    n = int(rng.integers(1, 3000))
    host = rng.standard_normal(n).astype(np.float32)
    c = float(rng.uniform(-2, 2))
    jdev = J.Isthmus.get().device(dev.id)
    x = jdev.fromArray(jvm.JArray(jvm.JFloat)(host))
    out = jdev.fromArray(jvm.JArray(jvm.JFloat)(np.full(n, np.nan, np.float32)))  # poisoned
    try:
        crossings.clear()
        with J.Ops.call(name, c, x) as y:  # first use: resolved once, then one call
            assert crossings == {"Runtime.library": 1, "OpHandle.call4": 1}, crossings
            np.testing.assert_allclose(np.array(y.toFloatArray()), host + np.float32(c), rtol=1e-6, atol=1e-6)
        crossings.clear()
        assert J.Ops.callInto(name, out, c, x).equals(out)
        assert crossings == {"OpHandle.call4": 1}, crossings
        np.testing.assert_allclose(np.array(out.toFloatArray()), host + np.float32(c), rtol=1e-6, atol=1e-6)
        with jdev.library(name).launch(c, x) as y:  # bound to the device: the registry's op too
            np.testing.assert_allclose(np.array(y.toFloatArray()), host + np.float32(c), rtol=1e-6, atol=1e-6)
        register(-1.0)  # registered again: Java's handle runs the newer spec
        with J.Ops.call(name, c, x) as y:
            np.testing.assert_allclose(np.array(y.toFloatArray()), host - np.float32(c), rtol=1e-6, atol=1e-6)
    finally:
        x.close()
        out.close()


def test_a_user_tunable_kernel_without_a_function_is_no_op_for_java(jvm, J, dev):
    """Kernels declared for tuning (isthmus.tune.declare) are in the registry with no function to call."""
    from isthmus.tune import declare

    src = "__kernel void r12jv_k(const long n, __global float* x) { long i = get_global_id(0); if (i < n) x[i] += 1; }"
    declare("r12jv_k", src, tunables={"WG": ((32, 64), 64)}, problem=("n",),
            grid=lambda p, cfg: ((-(-p["n"] // cfg["WG"]) * cfg["WG"],), (cfg["WG"],)),
            inputs=lambda p, dt, rng: (np.ones(p["n"], dt),), scalars=lambda p: (p["n"],), output=0,
            reference=lambda x: x + 1)
    from isthmus.ops import registry

    x = J.Isthmus.get().device(dev.id).fromArray(jvm.JArray(jvm.JFloat)([1.0, 2.0]))
    try:
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException"), match="the library has"):
            J.Ops.call("r12jv_k", x)
    finally:
        x.close()
        registry._registry.pop("r12jv_k", None)  # noqa: SLF001 - no public unregister


def test_an_op_by_name_prepares_on_the_device_of_its_buffers(jvm, J, dev, rng):
    """Runtime.library(name).prepare: the plan of a registered op is made where its buffers live."""
    from isthmus.java import jvm as hosted

    n = int(rng.integers(1, 999))
    host = rng.standard_normal(n).astype(np.float32)
    x = J.Isthmus.get().device(dev.id).fromArray(jvm.JArray(jvm.JFloat)(host))
    op = hosted._runtime.library("scale")
    try:
        plan = op.prepare(jvm.JArray(jvm.JObject)([jvm.JDouble(3.0), J.Interop.handle(x)]), None, None)
        plan.launch()
        res = plan.result()
        np.testing.assert_allclose(np.array(res.toArray("float")), 3 * host, rtol=1e-6)
        res.close()
        plan.close()
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException"), match="no buffer among the arguments"):
            op.prepare(jvm.JArray(jvm.JObject)([jvm.JDouble(3.0)]), None, None)
    finally:
        x.close()


def _weighted(*xs, out=None):
    """A user's op of any arity: sum of (i + 1) * xs[i]; nothing for no argument."""
    if not xs:
        return None
    total = sum((i + 1) * x.to_numpy().astype(np.float64) for i, x in enumerate(xs)).astype(np.float32)
    return xs[0].device.asarray(total) if out is None else out.copy_from(total)


@pytest.mark.parametrize("into", [False, True])
def test_every_arity_crosses_once_in_slots_or_an_array(jvm, J, dev, rng, crossings, into):
    import uuid

    from isthmus.ops import registry
    from isthmus.ops.spec import OpSpec

    name = f"weighted_{uuid.uuid4().hex[:8]}"
    registry.register(OpSpec(name=name, source="<user>", entries=("weighted",), dtypes=("float32",), tunables=(),
                             problem=("n",), run=_weighted, library=False))
    jdev = J.Isthmus.get().device(dev.id)
    n = int(rng.integers(1, 500))
    hosts = [rng.standard_normal(n).astype(np.float32) for _ in range(6)]
    xs = [jdev.fromArray(jvm.JArray(jvm.JFloat)(h)) for h in hosts]
    out = jdev.fromArray(jvm.JArray(jvm.JFloat)(np.full(n, np.nan, np.float32)))  # poisoned
    args_of = jvm.JArray(jvm.JObject)
    try:
        J.Ops.call(name, args_of([]))  # resolved once per name, not counted below
        for k in range(7):
            crossings.clear()
            r = J.Ops.callInto(name, out, args_of(xs[:k])) if into else J.Ops.call(name, args_of(xs[:k]))
            assert crossings == {"OpHandle.call4" if k <= 4 else "OpHandle.call": 1}, (k, crossings)
            if k == 0:
                assert r is None
                continue
            want = sum((i + 1) * hosts[i].astype(np.float64) for i in range(k))
            if into:
                assert r.equals(out)
            np.testing.assert_allclose(np.array(r.toFloatArray()), want, rtol=1e-5, atol=1e-5)
            if not into:
                r.close()
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException"), match="argument 1 is null"):
            J.Ops.call(name, args_of([xs[0], None]))
    finally:
        registry._registry.pop(name, None)  # noqa: SLF001 - no public unregister
        for b in (*xs, out):
            b.close()


def test_version_and_device_names(jvm, J, dev):
    import isthmus

    assert str(J.Isthmus.get().version()) == isthmus.__version__
    text = str(J.Isthmus.get().device(dev.id))
    assert text.startswith(f"Device[{dev.id} ") and dev.name in text, text


def test_a_python_error_is_the_java_exceptions_cause_with_python_frames(jvm, J, dev):
    jdev = J.Isthmus.get().device(dev.id)
    x = jdev.fromArray(jvm.JArray(jvm.JFloat)([1.0, 2.0, 3.0]))
    try:
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException")) as info:
            J.Ops.call("gemm", x)  # gemm needs two operands: refused in Python
        error = info.value
        cause = error.getCause()
        assert isinstance(cause, jvm.JClass("io.isthmus.PythonException")), cause
        assert str(cause.getMessage()).startswith(f"{error.pythonType()}: "), cause.getMessage()
        frames = [(str(f.getFileName()), str(f.getMethodName())) for f in cause.getStackTrace()]
        assert frames and all(name.endswith(".py") for name, _ in frames), frames
        assert frames[-1] == ("proxy.py", "call"), frames  # outermost: the SPI gate Java called
        sw = jvm.JClass("java.io.StringWriter")()
        error.printStackTrace(jvm.JClass("java.io.PrintWriter")(sw, True))
        assert "Caused by: io.isthmus.PythonException: " in str(sw), str(sw)
    finally:
        x.close()


def test_isthmus_exceptions_from_java_are_isthmus_errors_in_python(jvm, J, dev):
    import isthmus
    from isthmus.errors import InvalidArgumentError, IsthmusError, UnsupportedDtypeError

    with pytest.raises(UnsupportedDtypeError) as info:  # thrown by Java code itself
        J.DType.fromPythonName("complex32")
    assert isinstance(info.value, TypeError) and isinstance(info.value, jvm.JException)
    assert "complex32" in str(info.value.getMessage())
    jdev = J.Isthmus.get().device(dev.id)
    with pytest.raises(InvalidArgumentError):  # raised in Python, through Java, back to Python
        jdev.library("no_such_op")
    with pytest.raises(isthmus.IsthmusError):
        J.Ops.softmax(None)
    assert issubclass(jvm.JClass("io.isthmus.NotAttachedException"), IsthmusError)
    assert issubclass(jvm.JClass("io.isthmus.OutOfDeviceMemoryException"), isthmus.errors.OutOfMemoryError)


def test_a_bfloat16_byte_buffer_is_the_first_bfloat16_of_a_process(dev):
    """DeviceHandle.fromBuffer finds bfloat16 by name before anything imported ml_dtypes (NumPy
    knows the name only after that import: it raised TypeError 'data type bfloat16 not understood')."""
    code = textwrap.dedent("""
        import sys, jpype, isthmus.java
        isthmus.java.start()
        assert "ml_dtypes" not in sys.modules
        J = jpype.JClass
        bb = J("java.nio.ByteBuffer").allocateDirect(6).order(J("java.nio.ByteOrder").nativeOrder())
        for bits in (0x3F80, 0xC000, 0x4040):  # bfloat16 1, -2, 3
            bb.putShort(jpype.JShort(bits))
        x = J("io.isthmus.Isthmus").get().device(sys.argv[1]).fromBuffer(bb.flip(), J("io.isthmus.DType").BFLOAT16, 3)
        print(list(x.toFloatArray()))
    """)
    r = subprocess.run([sys.executable, "-c", code, dev.id], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["[1.0,", "-2.0,", "3.0]"]
