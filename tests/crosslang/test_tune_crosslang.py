"""A config tuned from one language is used by launches from the other, across processes too.
(The Java TunerTest runs with the discovered JUnit classes: test_junit_suite.py.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys


def _python(code: str, env: dict) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_python_process_tunes_java_launch_uses_it(jvm, J, dev, tuning_db, tmp_path):
    env = dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db))
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "isthmus.cli", "tune", "transpose", "--device", dev.id, "--size",
                        "rows=40", "cols=50", "--strategy", "random", "--budget", "3", "--repeat", "3", "--json",
                        str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    best = json.loads(out.read_text())["best"]
    jdev = J.Isthmus.get().device(dev.id)
    problem = jvm.JClass("java.util.Map").of("rows", jvm.JLong(33), "cols", jvm.JLong(60))  # same bucket
    used = J.Tuner.config("transpose", jdev, problem, J.DType.FLOAT32)
    assert {str(k): int(v) for k, v in dict(used).items()} == best


def test_java_tunes_python_process_launch_uses_it(jvm, J, dev, tuning_db):
    jdev = J.Isthmus.get().device(dev.id)
    r = J.Tuner.of("softmax").device(jdev).size("rows", 5).size("cols", 70).strategy(J.Strategy.RANDOM).budget(3).seed(1).run()
    best = {str(k): int(v) for k, v in dict(r.best()).items()}
    code = ("import json, isthmus; from isthmus.ops.registry import OPS; from isthmus.ops.resolve import resolve; "
            "from isthmus.dtypes import lookup; "
            f"d = isthmus.device({dev.id!r}); "
            "print(json.dumps(resolve(OPS['softmax'], d, lookup('float32'), {'rows': 6, 'cols': 100})[0]))")
    used = json.loads(_python(code, dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db))).strip().splitlines()[-1])
    assert used == best


def test_kernel_declared_and_tuned_in_java_is_seen_by_python(jvm, J, dev, tuning_db):
    from isthmus.dtypes import lookup
    from isthmus.ops.resolve import resolve
    from isthmus.tune import db
    from isthmus.tune.space import kernel_family

    jdev = J.Isthmus.get().device(dev.id)
    J.TunerKernels.scale2()  # declares scale2_java through the Java builder
    r = J.Tuner.of("scale2_java").device(jdev).size("n", 500).strategy(J.Strategy.RANDOM).budget(2).seed(4).run()
    best = {str(k): int(v) for k, v in dict(r.best()).items()}
    family = kernel_family("scale2_java")
    assert family is not None and [t.name for t in family.tunables] == ["WG"]
    assert db.explain(family, dev, lookup("float32"), {"n": 400})[1] == best
    assert resolve(family, dev, lookup("float32"), {"n": 400})[0] == best


def test_java_tuner_refuses_bad_sizes_and_budgets_with_hints_in_java(jvm, J, dev, tuning_db):
    """Issue 26, items 8 and 11: the message says what to write in Java, not a Python dict."""
    import pytest

    jdev = J.Isthmus.get().device(dev.id)

    def softmax(rows_name="rows", rows=5):
        return J.Tuner.of("softmax").device(jdev).size(rows_name, rows).size("cols", 70)

    cases = [(lambda: softmax(rows=0).run(), 'got .size("rows", 0); e.g. .size("rows", 8192).size("cols", 70)'),
             (lambda: softmax(rows=-4).run(), "size rows must be at least 1"),
             (lambda: softmax(rows_name="rowz").run(), "unknown size 'rowz'"),
             (lambda: J.Tuner.of("softmax").device(jdev).size("rows", 5).run(), 'missing size cols'),
             (lambda: softmax().budget(-1).run(), "got .budget(-1) (leave it out for 50, or e.g. .budget(200))"),
             (lambda: softmax().seconds(-1).run(), "got .seconds(-1) (leave it out for none"),
             (lambda: J.Tuner.config("softmax", jdev, jvm.JClass("java.util.Map").of("rows", jvm.JLong(0), "cols",
                                                                                      jvm.JLong(7)),
                                     J.DType.FLOAT32), '.size("rows", 8192).size("cols", 7)')]
    for call, says in cases:
        with pytest.raises(J.InvalidArgumentException) as info:
            call()
        message = str(info.value.getMessage())
        assert says in message and "{" not in message and "problem=" not in message, message
