"""io.isthmus.SafeTensors.load from Python's side: the Java buffers are the allocations Python's
loader made, through staging chunks smaller than the tensors, and every error is its Java mirror."""
from __future__ import annotations

import numpy as np
import pytest

import isthmus

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def test_java_loads_through_small_staging_chunks(jvm, J, dev, rng, tmp_path, monkeypatch):
    import ml_dtypes

    monkeypatch.setenv("ISTHMUS_LOAD_STAGING_KB", "1")
    tensors = {"w": rng.standard_normal((37, 29)).astype(ml_dtypes.bfloat16),
               "b": rng.integers(-9, 9, 1001, dtype=np.int64), "s": np.array(3.5, np.float32)}
    safetensors_numpy.save_file(tensors, tmp_path / "model.safetensors")
    before = isthmus.live_buffers()
    path = jvm.JClass("java.nio.file.Path").of(str(tmp_path), [])
    weights = J.SafeTensors.load(path, J.Isthmus.get().device(dev.id))
    try:
        assert sorted(str(n) for n in weights.names()) == sorted(tensors)
        for name, host in tensors.items():
            b = weights.get(name)
            assert tuple(b.shape()) == host.shape and str(b.dtype().pythonName()) == str(host.dtype)
            back = jvm.JClass("java.nio.ByteBuffer").allocateDirect(host.nbytes).order(
                jvm.JClass("java.nio.ByteOrder").nativeOrder())
            b.copyTo(back)
            assert bytes(memoryview(back)) == host.tobytes(), name
    finally:
        weights.close()
    assert isthmus.live_buffers() == before


def test_damaged_file_reaches_java_as_format_exception(jvm, J, dev, tmp_path):
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 16)
    path = jvm.JClass("java.nio.file.Path").of(str(tmp_path / "bad.safetensors"), [])
    with pytest.raises(J.FormatException) as info:
        J.SafeTensors.load(path, J.Isthmus.get().device(dev.id))
    assert "above safetensors' limit" in str(info.value.getMessage())
    assert isinstance(info.value, J.InvalidArgumentException)
