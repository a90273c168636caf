"""benchmarks/tools/ray_deps.py: from a Ray bundle's wheels, exactly the requirements this interpreter
lacks are installed (with their own requirements), and one that cannot be met stops the run with a
message naming it. The bundles here are made up: a ``ray`` METADATA and small real wheels."""
from __future__ import annotations

import base64
import hashlib
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the suite is the checkout's benchmarks/ package, not part of the wheel

from benchmarks.tools import ray_deps  # noqa: E402


def _wheel(folder: Path, name: str, version: str, requires=()) -> Path:
    """A minimal valid pure-Python wheel of ``name`` (module ``name`` with VALUE = version)."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {f"{module}/__init__.py": f"VALUE = {version!r}\n",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
             + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name_in_zip, text in files.items():
            z.writestr(name_in_zip, text)
    return path


def _bundle(tmp_path: Path, ray_requires: list[str]) -> Path:
    bundle = tmp_path / "rayg"
    meta = bundle / "site" / "ray-9.9.9.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: ray\nVersion: 9.9.9\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in ray_requires))
    (bundle / "whl").mkdir()
    return bundle


def _fresh() -> str:
    """A distribution name no interpreter has."""
    return f"isthmus-test-{uuid.uuid4().hex[:10]}"


def test_only_what_is_missing_is_installed_with_its_own_requirements(tmp_path):
    missing, its_need = _fresh(), _fresh()
    bundle = _bundle(tmp_path, ["numpy>=1.0", f"{missing}>=1.0", "not-needed-here; extra == 'all'",
                                "old-python-only>=1; python_version < '3.0'"])
    _wheel(bundle / "whl", missing, "1.2", requires=[f"{its_need}>=2", "pytest"])
    _wheel(bundle / "whl", its_need, "2.0")
    _wheel(bundle / "whl", "numpy", "0.0.1")  # must not be chosen: this interpreter's numpy meets ray's need
    target = tmp_path / "target"
    assert ray_deps.main([str(bundle), str(target)]) == 0
    installed = sorted(p.name for p in target.iterdir() if p.name.endswith(".dist-info"))
    assert installed == sorted([f"{missing.replace('-', '_')}-1.2.dist-info", f"{its_need.replace('-', '_')}-2.0.dist-info"])
    assert (target / missing.replace("-", "_") / "__init__.py").read_text() == "VALUE = '1.2'\n"


def test_an_extra_name_is_checked_like_rays_own(tmp_path):
    wanted = _fresh()
    bundle = _bundle(tmp_path, [])
    _wheel(bundle / "whl", wanted, "3.1")
    present, wheels = ray_deps.resolve(bundle, [f"{wanted}>=3"])
    assert [w.name for w in wheels] == [f"{wanted.replace('-', '_')}-3.1-py3-none-any.whl"]
    present, wheels = ray_deps.resolve(bundle, ["numpy>=1"])
    assert wheels == [] and any(p.startswith("numpy ") for p in present)


def test_a_need_the_bundle_cannot_meet_names_itself(tmp_path):
    absent = _fresh()
    bundle = _bundle(tmp_path, [f"{absent}>=1"])
    with pytest.raises(SystemExit, match=f"{absent}>=1 is needed .*not installed.* no wheel of it"):
        ray_deps.resolve(bundle, [])
    too_old = _fresh()
    bundle = _bundle(tmp_path / "b", [f"{too_old}>=2"])
    _wheel(bundle / "whl", too_old, "1.0")
    with pytest.raises(SystemExit, match=f"{too_old}>=2 is needed and the bundle's wheel is 1.0"):
        ray_deps.resolve(bundle, [])


def test_an_interpreter_version_too_old_is_replaced_from_the_bundle(tmp_path):
    bundle = _bundle(tmp_path, ["pytest>=999"])  # this interpreter's pytest is older than that
    _wheel(bundle / "whl", "pytest", "999.0")
    present, wheels = ray_deps.resolve(bundle, [])
    assert [w.name for w in wheels] == ["pytest-999.0-py3-none-any.whl"] and present == []
