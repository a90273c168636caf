"""isthmus.measure.report: what ran where, the naming of results, and the report writer's files
and fields."""
import json

import numpy as np
import pytest

import isthmus
from isthmus import measure
from isthmus.errors import InvalidArgumentError


def test_machine_names_the_versions():
    m = measure.machine()
    assert m["isthmus"] == isthmus.__version__ and m["numpy"] == np.__version__
    assert {"host", "platform", "python", "cpus"} <= set(m)


def test_result_names_follow_the_scheme():
    info = {"backend": "opencl", "name": "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"}
    assert measure.result_stem("shapes", info) == "shapes-opencl-pthread-skylake-avx512-intel-r-xeon-r-processor"
    h200 = {"backend": "cuda", "name": "NVIDIA H200"}
    assert measure.result_stem("bench", h200, "quick") == "bench-cuda-nvidia-h200-quick"
    assert measure.result_stem("multidevice") == "multidevice"
    assert measure.result_stem("ray_overhead", None, "pocl 1thread") == "ray_overhead-pocl-1thread"
    assert len(measure.slug("x" * 100)) == 60


@pytest.mark.parametrize("bad", ["Shapes", "a-b", "", "has space", None, "_x"])
def test_a_bad_suite_name_is_a_typed_error(bad):
    with pytest.raises(InvalidArgumentError, match="suite name"):
        measure.result_stem(bad)
    with pytest.raises(InvalidArgumentError):
        measure.Report(bad, "title")


def test_command_line_reads_as_typed():
    assert measure.command_line(["/x/benchmarks/__main__.py", "shapes", "--device", "cuda:0"]) == \
        "python -m benchmarks shapes --device cuda:0"
    assert measure.command_line(["/venv/bin/isthmus", "bench", "--out", "a dir"]) == "isthmus bench --out 'a dir'"


def test_report_writes_markdown_and_json_side_by_side(dev, tmp_path):
    rows = [{"op": "sum", "ms": 1.23456, "note": "a|b"}, {"op": "max", "ms": None, "note": ""}]
    report = measure.Report("mysuite", "A title", dev, data={"rows": rows}, notes=["a note"], extra={"java": "21"},
                            command="python -m benchmarks mysuite --quick")
    report.add_records(rows, ["op", "ms", "note"], "caption")
    report.add_text("```\nprofile\n```")
    base = report.write(tmp_path / "deep", "run 2")
    assert base.name == f"{measure.result_stem('mysuite', dev)}-run-2"
    doc = json.loads((tmp_path / "deep" / f"{base.name}.json").read_text())
    assert set(doc) == {"suite", "title", "date", "command", "devices", "machine", "notes", "data"}
    assert doc["data"] == {"rows": rows} and doc["devices"] == [dev.info()] and doc["notes"] == ["a note"]
    assert doc["machine"]["java"] == "21" and doc["machine"]["isthmus"] == isthmus.__version__
    md = (tmp_path / "deep" / f"{base.name}.md").read_text()
    assert md.startswith("# A title\n")
    for text in (doc["date"], "`python -m benchmarks mysuite --quick`", dev.name, f"driver {dev.driver_version}",
                 f"Python {doc['machine']['python']}", f"isthmus {isthmus.__version__}", "java 21", "- a note",
                 "| op | ms | note |", "| sum | 1.235 | a\\|b |", "| max | - |  |", "```\nprofile\n```"):
        assert text in md, text
    assert md.index("caption") < md.index("| op |") < md.index("profile")


def test_report_of_several_devices_or_none_drops_the_device_from_the_name(tmp_path):
    info = {"id": "opencl:0", "name": "n", "vendor": "v", "backend": "opencl", "driver_version": "1", "platform": "p"}
    two = measure.Report("multi", "t", [info, dict(info, id="opencl:1")])
    assert two.stem() == "multi" and two.stem("x") == "multi-x"
    assert measure.Report("solo", "t", info).stem() == "solo-opencl-n"


def test_a_malformed_table_raises_and_writes_nothing(tmp_path):
    report = measure.Report("mysuite", "t")
    report.add_table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="1 cells for 2 columns"):
        report.write(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_stored_run_renders_with_its_own_date_and_machine():
    machine = {"host": "gpu-box", "platform": "Linux", "python": "3.12", "numpy": "2.0", "isthmus": "0.0.1",
               "cupy": "14.2"}
    md = measure.Report("bench", "t", date="2026-12-02T10:00:00+00:00", machine=machine,
                        command="isthmus bench").markdown()
    assert "2026-12-02T10:00:00+00:00" in md and "gpu-box" in md and "cupy 14.2" in md and "? CPUs" in md
