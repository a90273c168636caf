import json
import os
import subprocess
import sys

import pytest

import isthmus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_devices_have_stable_ids_and_descriptions():
    found = isthmus.devices()
    assert found, "PoCL should give at least one OpenCL CPU device"
    ids = [d.id for d in found]
    assert len(set(ids)) == len(ids)
    for d in found:
        assert d.backend in ("opencl", "cuda") and d.id.startswith(d.backend + ":")
        assert d.name and d.vendor and d.driver_version
        assert d.memory > 0 and d.compute_units > 0 and d.max_work_group_size > 0
        assert isthmus.device(d.id) is d
    assert [d.id for d in isthmus.devices()] == ids


def test_default_prefers_gpus_then_cpus():
    best = isthmus.device()
    order = {"gpu": 0, "accelerator": 1, "cpu": 2}
    assert all((best.backend != "cuda", order[best.kind]) <= (d.backend != "cuda", order[d.kind])
               for d in isthmus.devices())


def test_isthmus_device_env_selects(monkeypatch):
    last = isthmus.devices()[-1]
    monkeypatch.setenv("ISTHMUS_DEVICE", last.id)
    assert isthmus.device() is last
    monkeypatch.setenv("ISTHMUS_DEVICE", "opencl:99")
    with pytest.raises(isthmus.InvalidArgumentError, match="available"):
        isthmus.device()


def test_unknown_backend_or_index():
    with pytest.raises(isthmus.IsthmusError):
        isthmus.device("vulkan:0")
    with pytest.raises(isthmus.InvalidArgumentError, match="opencl:1234"):
        isthmus.device("opencl:1234")


def _run(code: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, cwd=ROOT)


def test_no_backend_at_all_says_what_to_install():
    proc = _run("import sys; sys.modules['pyopencl'] = None; sys.modules['cupy'] = None\n"
                "import isthmus\n"
                "try:\n    isthmus.device()\nexcept isthmus.BackendUnavailableError as e:\n    print('ERR', e)\n")
    assert "ERR" in proc.stdout, proc.stderr
    # commands that work for a package that is not on PyPI: the backends' own packages
    assert "pip install pyopencl" in proc.stdout and "apt-get install pocl-opencl-icd" in proc.stdout
    assert "pip install cupy-cuda12x" in proc.stdout and "isthmus[" not in proc.stdout


def test_missing_cupy_is_fine_when_opencl_works():
    proc = _run("import sys; sys.modules['cupy'] = None\nimport isthmus\nprint(isthmus.device().backend)")
    assert proc.stdout.strip() == "opencl", proc.stderr


def test_import_touches_no_device():
    proc = _run("import isthmus, sys\nd = sys.modules['isthmus.device']\n"
                "print(d._registry is None, 'pyopencl' in sys.modules)")
    assert proc.stdout.split() == ["True", "False"], proc.stderr


def test_cli_devices_json_and_table():
    proc = subprocess.run([sys.executable, "-m", "isthmus.cli", "devices", "--json"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    data = json.loads(proc.stdout)
    assert {d["id"] for d in data} == {d.id for d in isthmus.devices()}
    assert {"name", "vendor", "backend", "memory", "compute_units", "max_work_group_size",
            "driver_version"} <= set(data[0])
    table = subprocess.run([sys.executable, "-m", "isthmus.cli", "devices"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT, env={**os.environ, "COLUMNS": "200"})
    assert table.returncode == 0 and data[0]["id"] in table.stdout


def test_transfer_lane_moves_data_beside_the_device_queue(dev, rng):
    """The lane isthmus.ray's pipeline overlaps copies with (a CUDA stream of its own, or the device's
    queue): an upload is in the buffer when it returns, a download holds what a kernel wrote once
    that kernel's marker is waited for, and empty buffers cost nothing."""
    import numpy as np

    lane = dev._transfer_lane()
    host = rng.standard_normal(1001).astype(np.float32)
    x, y = dev.empty(host.shape, np.float32), dev.asarray(np.full(host.shape, np.nan, np.float32))
    lane.upload(x, host)
    np.testing.assert_array_equal(x.to_numpy(), host)
    isthmus.ops.scale(3.0, x, out=y)
    lane.wait(dev._record())
    np.testing.assert_allclose(lane.download(y), 3.0 * host, rtol=1e-6)
    assert lane.download(dev.empty((0,), np.float32)).shape == (0,)
