"""Shared fixtures: every device-needing test runs on every available device, with fresh random
inputs each run and a private program cache."""
from __future__ import annotations

import os

import numpy as np
import pytest


def pytest_configure(config):
    # A private cache per test session: no test sees programs another run compiled. Under
    # pytest-xdist (`make test` runs `-n 2`) each worker gets a folder of its own inside the
    # session's, with its own tuning database: workers never share a cache file.
    import tempfile

    os.environ.setdefault("ISTHMUS_CACHE_DIR", tempfile.mkdtemp(prefix="isthmus-test-cache-"))
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["ISTHMUS_CACHE_DIR"] = os.path.join(os.environ["ISTHMUS_CACHE_DIR"], worker)
        os.makedirs(os.environ["ISTHMUS_CACHE_DIR"], exist_ok=True)
        os.environ["ISTHMUS_TUNING_DB"] = os.path.join(os.environ["ISTHMUS_CACHE_DIR"], "tuning.sqlite")
    os.environ.setdefault("ISTHMUS_TUNING_DB", os.path.join(os.environ["ISTHMUS_CACHE_DIR"], "tuning.sqlite"))


# Tests that host a JVM share one per process (tests/crosslang/conftest.py), Ray's start a cluster
# and the benchmark smoke tests share one run of every benchmark module (90 s on the GPU machine):
# under `--dist loadgroup` each kind runs on one worker, not once per worker.
_GROUPS = {"crosslang": "jvm", "ray": "ray", "benchmarks": "benchmarks"}




def _device_ids() -> list[str]:
    import isthmus

    try:
        return [d.id for d in isthmus.devices()]
    except isthmus.BackendUnavailableError:
        return []


DEVICE_IDS = _device_ids()
GPU_IDS = []
if DEVICE_IDS:
    import isthmus

    GPU_IDS = [d.id for d in isthmus.devices() if d.kind == "gpu"]


@pytest.fixture(params=DEVICE_IDS or [pytest.param(None, marks=pytest.mark.skip(reason="no device"))])
def dev(request):
    import isthmus

    return isthmus.device(request.param)


@pytest.fixture
def rng():
    # Fresh inputs on every run; the seed is printed on failure so a case can be replayed.
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture
def tuning_db(tmp_path, monkeypatch):
    """A private, empty tuning database for one test."""
    from isthmus.tune import db as dbmod

    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    yield tmp_path / "tuning.sqlite"
    dbmod.reset()


def pytest_collection_modifyitems(config, items):
    # one hook (a second definition in this module would replace the first: the groups were lost so,
    # and every worker ran the benchmark smoke fixture, 16 at once on the GPU machine)
    skip_gpu = pytest.mark.skip(reason="needs a GPU (CUDA or GPU OpenCL); none present")
    for item in items:
        parts = item.path.parts
        group = next((g for folder, g in _GROUPS.items() if folder in parts[-3:-1]), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        if "gpu" in item.keywords and not GPU_IDS:
            item.add_marker(skip_gpu)


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A private, empty user tuning database for the test (the shipped configs stay as they are)."""
    from isthmus.tune import db as dbmod

    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    yield dbmod.user()
    dbmod.reset()
