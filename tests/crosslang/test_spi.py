"""The Java SPI (io.isthmus.spi) and its Python side (isthmus.java.spi): every interface method
has its Python implementation, and a library op from Java crosses the bridge once."""
from __future__ import annotations

import importlib
import pkgutil
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
    import isthmus.tune.java_spi  # noqa: F401 - registers TuneRun
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
        crossings.clear()
        with J.Ops.softmax(x) as p:
            assert crossings == {"Runtime.op": 1}, crossings  # before: Runtime.softmax, BufferHandle.shape, .dtype
            assert list(p.shape()) == [rows, cols] and str(p.dtype()) == "FLOAT32"
            want = np.exp(host.reshape(rows, cols) - host.reshape(rows, cols).max(1, keepdims=True))
            np.testing.assert_allclose(np.array(p.toFloatArray()).reshape(rows, cols),
                                       want / want.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
        crossings.clear()
        assert J.Ops.softmax(x, out).equals(out)
        J.Ops.gemm(x, x, J.Transpose.B).close()
        assert crossings == {"Runtime.op": 2, "BufferHandle.close": 1}, crossings
    finally:
        x.close()
        out.close()


@pytest.mark.parametrize("name", ["softmx", "Buffer", "_softmax", "annotations"])
def test_runtime_op_names_only_public_op_functions(jvm, J, dev, name):
    from isthmus.java import jvm as hosted

    x = J.Isthmus.get().device(dev.id).fromArray(jvm.JArray(jvm.JFloat)([1.0, 2.0]))
    try:
        args = jvm.JArray(jvm.JObject)([J.Interop.handle(x)])
        with pytest.raises(jvm.JClass("io.isthmus.InvalidArgumentException")) as info:
            hosted._runtime.op(name, args, None, None)
        assert "isthmus.ops has" in str(info.value.getMessage()) and "softmax" in str(info.value.getMessage())
    finally:
        x.close()
