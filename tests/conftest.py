"""Shared fixtures: every device-needing test runs on every available device, with fresh random
inputs each run and a private program cache."""
from __future__ import annotations

import os
import re

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
    # Fresh inputs on every run; the seed is printed on failure so a case can be replayed:
    # ISTHMUS_TEST_SEED=<seed> pytest <the test> (-p no:randomly where pytest-randomly is installed)
    seed = int(os.environ.get("ISTHMUS_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
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


def _recorded_durations() -> list[tuple[re.Pattern, float]]:
    """(node id pattern, seconds) of tests/slow_tests.txt: a ``*`` in a node id matches anything."""
    path = os.path.join(os.path.dirname(__file__), "slow_tests.txt")
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                seconds, nodeid = line.split(maxsplit=1)
                rows.append((re.compile(re.escape(nodeid.strip()).replace(r"\*", ".*") + "$"), float(seconds)))
    return rows


def slowest_first(items: list) -> list:
    """``items`` with the tests recorded slow first, longest first (the others after them, in their
    order): pytest-xdist's load scheduling hands out tests in collection order, so the long ones start
    at once on separate workers and the pass ends on short tests instead of waiting on a two-minute
    test started last (issue 26 item 13: the GPU pass was cut at its limit with three such running)."""
    rows = _recorded_durations()

    def recorded(item) -> float:
        return max((s for pattern, s in rows if pattern.match(item.nodeid)), default=0.0)

    return sorted(items, key=lambda item: -recorded(item))  # stable: the rest keep their order


def pytest_collection_modifyitems(config, items):
    # (no xdist_group markers: pytest-xdist 3.8 groups by a suffix to item._nodeid, which pytest 9
    # no longer reads, so `--dist loadgroup` spreads every test; a worker hosts its own JVM, and each
    # benchmark smoke test runs its own module)
    skip_gpu = pytest.mark.skip(reason="needs a GPU (CUDA or GPU OpenCL); none present")
    for item in items:
        if "gpu" in item.keywords and not GPU_IDS:
            item.add_marker(skip_gpu)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # in one process the file order keeps module fixtures shared
        items[:] = slowest_first(items)


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A private, empty user tuning database for the test (the shipped configs stay as they are)."""
    from isthmus.tune import db as dbmod

    monkeypatch.setenv("ISTHMUS_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dbmod.reset()
    yield dbmod.user()
    dbmod.reset()
