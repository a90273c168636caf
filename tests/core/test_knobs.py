"""knobs.kernel_dir(): the kernel sources come from the package isthmus.opencl (package data in a
wheel, the checkout's opencl/ folder mapped by an editable install), never from a path computed
from where the Python files happen to lie."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from isthmus import knobs
from isthmus.errors import BackendUnavailableError


def test_kernel_dir_is_the_package_isthmus_opencl(monkeypatch):
    monkeypatch.delenv("ISTHMUS_KERNEL_DIR", raising=False)
    spec = importlib.util.find_spec("isthmus.opencl")
    if spec is None:  # the GPU machine runs the source tree (PYTHONPATH=python), where opencl/ is not a package
        pytest.skip("isthmus is not installed here: the package isthmus.opencl exists only in an install")
    assert knobs.kernel_dir() in [Path(p) for p in spec.submodule_search_locations]
    assert {"dtype.h", "cuda_prelude.h", "axpy.cl", "gemm.cl"} <= {p.name for p in knobs.kernel_dir().iterdir()}
    monkeypatch.setenv("ISTHMUS_KERNEL_DIR", "/elsewhere/opencl")
    assert knobs.kernel_dir() == Path("/elsewhere/opencl")


def test_without_the_package_the_error_says_what_to_do(monkeypatch):
    monkeypatch.delenv("ISTHMUS_KERNEL_DIR", raising=False)
    knobs._packaged_kernel_dir.cache_clear()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    try:
        with pytest.raises(BackendUnavailableError, match="ISTHMUS_KERNEL_DIR"):
            knobs.kernel_dir()
    finally:
        monkeypatch.undo()
        knobs._packaged_kernel_dir.cache_clear()
    assert (knobs.kernel_dir() / "dtype.h").is_file()
