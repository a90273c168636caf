"""Every module of benchmarks/ runs: each in a quick mode on PoCL (``SMOKE``, its arguments), in a
process of its own (``python -m benchmarks --smoke OUT NAME``: the modules run in parallel under
pytest-xdist; one process for all of them took 130-170 s on the GPU machine, and every worker that
drew one of these tests ran it again), and writes its report under the naming scheme. A module that
cannot run here says why in ``SMOKE`` (the skip reason); a peer that is missing (torch, CLBlast) is
skipped inside the module with the reason printed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the suite is the checkout's benchmarks/ package, not part of the wheel

import benchmarks  # noqa: E402

MODULES = benchmarks.modules()
SUITE = {"library": "bench"}  # the module of `isthmus bench` names its results after the command


def _pocl() -> str | None:
    import isthmus

    try:
        return next((d.id for d in isthmus.devices() if d.backend == "opencl" and d.kind == "cpu"), None)
    except isthmus.BackendUnavailableError:
        return None


def _smoke(name: str, out: Path) -> tuple[dict, Path]:
    """The quick run of module ``name`` on PoCL: (its summary, its results folder)."""
    smoke = benchmarks.load(name).SMOKE
    if isinstance(smoke, str):
        pytest.skip(f"{name}: {smoke}")
    device = _pocl()
    if device is None:
        pytest.skip("no PoCL (OpenCL CPU) device")
    r = subprocess.run([sys.executable, "-m", "benchmarks", "--smoke", str(out), name], cwd=ROOT, capture_output=True,
                       text=True, timeout=400, env=dict(os.environ, ISTHMUS_DEVICE=device))
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert (out / "smoke.json").exists(), f"the smoke run ended early: exit {r.returncode}\n{r.stderr[-3000:]}"
    return json.loads((out / "smoke.json").read_text())[name], out / name


def test_every_module_says_how_to_run_it_quickly():
    assert {"shapes", "library", "launch_overhead", "profile_ops", "merge_bundled"} <= set(MODULES)
    for name in MODULES:
        module = benchmarks.load(name)
        assert callable(getattr(module, "main", None)), f"{name}: no main(argv)"
        smoke = getattr(module, "SMOKE", None)
        assert isinstance(smoke, (list, str)) and smoke, f"{name}: SMOKE: quick-run arguments, or why there are none"


def test_the_runner_lists_and_refuses_unknown_names():
    listed = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0, listed.stderr
    for name, (kind, _) in MODULES.items():
        assert any(line.split()[:2] == [kind, name] for line in listed.stdout.splitlines()), name
    bad = subprocess.run([sys.executable, "-m", "benchmarks", "no_such_bench"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and "no benchmark, diagnostic or tool named 'no_such_bench'" in bad.stderr


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_runs_quickly_on_pocl(name, tmp_path):
    entry, folder = _smoke(name, tmp_path)
    log = (folder / "log.txt").read_text()
    assert entry["rc"] == 0, f"{name} {entry['argv']}: exit {entry['rc']}\n{entry['error']}\n{log[-3000:]}"
    if name == "softmax_variants" and _missing("torch"):
        assert "no torch rows: torch is not installed" in log  # the peer's absence is said, not hidden
    if "{out}" in benchmarks.load(name).SMOKE:
        reports = sorted(folder.glob("*.md"))
        suite = SUITE.get(name, name)
        assert any(p.stem == suite or p.stem.startswith(f"{suite}-") for p in reports), (name, reports)
        for p in reports:
            assert p.with_suffix(".json").exists(), f"{p.name} has no JSON twin"


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None
