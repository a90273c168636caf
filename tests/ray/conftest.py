"""One local Ray cluster and one pool of two device actors for the Ray tests.

The cluster has two CPUs; PoCL exposes two devices (POCL_DEVICES="pthread pthread"), one per actor.
The actors start their JVM with the Java test tasks (tests/ray/java) and the example's task
(examples/ray/java), compiled here with javac, so
Python and Java tasks run on the same actors. Both are made once: starting an actor (a process, a
device, a JVM) costs seconds on two cores.
"""
from __future__ import annotations

import faulthandler
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
if getattr(ray, "__file__", None) is None:  # this folder itself (a namespace package "ray") when Ray is absent
    pytest.skip("Ray is not installed (pip install 'isthmus[ray]')", allow_module_level=True)

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "ray"


def _compile_java(out: Path) -> list[str]:
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac: the Java ShardTask tests need a JDK")
    from isthmus.java import jvm

    sources = sorted(str(p) for folder in (HERE / "java", EXAMPLE / "java") for p in folder.rglob("*.java"))
    proc = subprocess.run([javac, "-d", str(out), "-cp", os.pathsep.join(jvm.isthmus_classpath()), *sources],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [str(out)]


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    tuning_db = tmp_path_factory.mktemp("ray-tuning") / "tuning.sqlite"
    # TMPDIR: the actors' device claims (isthmus/ray/claim.py: a file per device under the temporary
    # folder, as a node's clusters share them) are this cluster's own, so that another pytest-xdist
    # worker's cluster on this machine does not own the two PoCL devices this one's actors claim
    env = {"POCL_DEVICES": "pthread pthread", "ISTHMUS_TUNING_DB": str(tuning_db),
           "ISTHMUS_CACHE_DIR": os.environ["ISTHMUS_CACHE_DIR"], "TMPDIR": str(tmp_path_factory.mktemp("ray-tmp"))}
    had_faulthandler = faulthandler.is_enabled()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    if not had_faulthandler:
        faulthandler.disable()  # ray.init turns it on; it breaks a JVM hosted by this process (DESIGN.md)
    yield env
    ray.shutdown()


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory):
    return _compile_java(tmp_path_factory.mktemp("ray-java"))


@pytest.fixture(scope="session")
def pool(ray_cluster, java_classes):
    import isthmus.ray

    p = isthmus.ray.DevicePool(2, classpath=java_classes, retries=2, max_restarts=20)
    yield p
    p.close()


@pytest.fixture(autouse=True)
def _tasks_by_value(request):
    # Test modules are importable here only (pytest's path), not in the actors: ship their tasks by value.
    ray.cloudpickle.register_pickle_by_value(request.module)
