"""One hosted JVM for the whole session, with the io.isthmus classes, the Java test classes
and JUnit on its classpath (built by `make jar`: target/test-classes, target/test-classpath.txt).

DESIGN (measured): run with -p no:faulthandler (pyproject sets it), select JUnit test classes
explicitly (a package scan finds nothing once JPype has opened the jar), shut the JVM down
explicitly at exit (isthmus.java registers that).
"""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEST_CLASSES = REPO / "target" / "test-classes"
TEST_CLASSPATH = REPO / "target" / "test-classpath.txt"


def _test_classpath() -> list[str]:
    if not (TEST_CLASSES / "io" / "isthmus" / "CrossLang.class").exists() or not TEST_CLASSPATH.exists():
        pytest.skip("Java test classes not built: run `make jar` (mvn install) first", allow_module_level=True)
    return [str(TEST_CLASSES), *TEST_CLASSPATH.read_text().strip().split(":")]


@pytest.fixture(scope="session")
def jvm():
    pytest.importorskip("jpype")
    import isthmus.java

    isthmus.java.start(classpath=_test_classpath())
    import jpype

    return jpype


@pytest.fixture(scope="session")
def J(jvm):
    """Java classes by simple name: J.CrossLang, J.Isthmus, ..."""
    class Classes:
        def __getattr__(self, name):
            pkg = "java.lang." if name in ("IllegalStateException", "String", "System") else "io.isthmus."
            return jvm.JClass(pkg + name)

    return Classes()


# Tiny random checkpoints for the Java tests tagged llama-model (io.isthmus.llm.LlamaModelTest):
# written once per session, their folders handed over as system properties.
LLAMA_MODELS = {
    "bf16": dict(dtype="bfloat16", seed=1),  # the defaults: grouped-query attention, an LM head of its own
    "f32": dict(dtype="float32", tie_word_embeddings=True, vocab_size=301, hidden_size=64, intermediate_size=96,
                num_attention_heads=4, num_key_value_heads=2, seed=2,
                rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 64}),
}


@pytest.fixture(scope="session")
def llama_models(jvm, tmp_path_factory):
    """name -> folder of each of LLAMA_MODELS, also set as the JVM's isthmus.test.llama.NAME."""
    from isthmus.llm.testing import write_random_llama

    folders = {}
    for name, kwargs in LLAMA_MODELS.items():
        folders[name] = write_random_llama(tmp_path_factory.mktemp(f"llama-{name}"), **kwargs)
        jvm.JClass("java.lang.System").setProperty(f"isthmus.test.llama.{name}", str(folders[name]))
    return folders

