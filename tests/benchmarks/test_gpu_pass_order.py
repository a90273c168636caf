"""The GPU pass's order (issue 26 item 13): under pytest-xdist the tests recorded slow in
tests/slow_tests.txt start first, longest first, and the others keep their order; every line of
that file names tests that exist."""
from __future__ import annotations

import importlib.util
import os
import re

_spec = importlib.util.spec_from_file_location(
    "suite_conftest", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py"))
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


class _Item:
    def __init__(self, nodeid):
        self.nodeid = nodeid


def test_recorded_slow_tests_start_first_longest_first_the_rest_in_order():
    rows = conftest._recorded_durations()
    assert len(rows) >= 20 and all(s > 0 for _, s in rows)
    slow = [p.pattern for p, _ in sorted(rows, key=lambda r: -r[1])[:3]]
    names = [re.sub(r"\\(.)", r"\1", p.rstrip("$")).replace(".*", "X") for p in slow]
    items = [_Item("tests/a.py::first"), *(_Item(n) for n in reversed(names)), _Item("tests/a.py::last")]
    ordered = [i.nodeid for i in conftest.slowest_first(items)]
    assert ordered == [*names, "tests/a.py::first", "tests/a.py::last"]


def test_every_recorded_slow_test_is_a_test_of_the_suite():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for pattern, _ in conftest._recorded_durations():
        path, _, name = re.sub(r"\\(.)", r"\1", pattern.pattern).partition("::")
        func = name.split("[")[0].rstrip("$")
        text = open(os.path.join(os.path.dirname(root), path), encoding="utf-8").read()
        assert f"def {func}(" in text, pattern.pattern


def test_the_list_is_rewritten_from_a_passs_junit_xml(tmp_path):
    from benchmarks.tools import slow_tests

    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.ops.test_ops_softmax" name="test_validity_is_the_same_across_a_bucket" time="20.5"/>'
        '<testcase classname="tests.tune.test_tune_targets_variants" '
        'name="test_the_op_launches_what_the_tuner_stored[opencl:1-gemm-float32]" time="124.4"/>'
        '<testcase classname="tests.core.test_dtypes" name="test_fast" time="0.1"/>'
        "</testsuite></testsuites>")
    out = tmp_path / "slow_tests.txt"
    assert slow_tests.main([str(junit), "--out", str(out)]) == 0
    rows = [line.split(maxsplit=1) for line in out.read_text().splitlines() if not line.startswith("#")]
    assert rows == [["124.40", "tests/tune/test_tune_targets_variants.py::test_the_op_launches_what_the_tuner_stored"
                               "[opencl:1-gemm-float32]"],
                    ["20.50", "tests/ops/test_ops_softmax.py::test_validity_is_the_same_across_a_bucket"]]
