"""examples/llm as a user runs it: the chat app through the launcher on a model that
isthmus.llm.testing.write_random_llama wrote (its streamed ids are Python's model's), its JUnit
test through `mvn test` (surefire's forked JVM hosted by Python through `isthmus jvm-home`)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from isthmus import __version__
from isthmus.java import jvm_home, maven

llm = pytest.importorskip("isthmus.llm")
from isthmus.llm.testing import write_random_llama  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm"
M2_JAR = maven.local_repository() / "io" / "isthmus" / "isthmus" / __version__ / f"isthmus-{__version__}.jar"

pytestmark = pytest.mark.skipif(shutil.which("mvn") is None or not M2_JAR.exists(),
                                reason="needs Maven and io.isthmus:isthmus installed (make jar)")


def test_chat_streams_what_the_python_model_generates(tmp_path, rng):
    import isthmus

    subprocess.run(["mvn", "-q", "-B", "-ntp", "compile"], cwd=EXAMPLE, check=True, timeout=300)
    folder = write_random_llama(tmp_path / "m", vocab_size=211, seed=int(rng.integers(1 << 30)))
    prompts = [rng.integers(0, 211, n).tolist() for n in (6, 1)]
    with llm.LlamaModel.load(folder, isthmus.device(), max_batch=1) as m:
        expected = [m.generate([p], llm.GenerationConfig(max_new_tokens=10)).tokens[0] for p in prompts]
    stdin = "".join(",".join(map(str, p)) + "\n" for p in prompts) + "\n"
    r = subprocess.run([sys.executable, "-m", "isthmus.java", "-cp", "target/classes", "example.llm.Chat", "--model",
                        str(folder), "--max-new-tokens", "10"], cwd=EXAMPLE, input=stdin, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0::2] == [",".join(map(str, t)) for t in expected], r.stdout
    assert all(line.startswith("[") and "tokens/s" in line for line in lines[1::2]), r.stdout


def test_chat_junit_test_runs_on_the_real_runtime(tmp_path):
    home = jvm_home.create(tmp_path / "jvm")
    r = subprocess.run(["mvn", "-B", "-ntp", f"-Disthmus.jvm.home={home}", "test"], cwd=EXAMPLE, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:]
    assert "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0" in r.stdout
