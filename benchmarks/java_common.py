"""Shared setup of the Java benchmarks: the hosted JVM with the bench classes, and reports
(JSON + a markdown table in benchmarks/results/, naming machine, device and versions)."""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def start_jvm():
    import isthmus.java

    test_classes = REPO / "target" / "test-classes"
    if not (test_classes / "io" / "isthmus" / "bench" / "JavaBench.class").exists():
        raise SystemExit("build the Java classes first: make jar")
    isthmus.java.start(classpath=[str(test_classes)])
    import jpype

    return jpype


def environment(dev) -> dict:
    import jpype
    import numpy as np

    import isthmus

    return {"machine": platform.node(), "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(), "isthmus": isthmus.__version__, "jpype": jpype.__version__,
            "numpy": np.__version__, "java": str(jpype.JClass("java.lang.System").getProperty("java.version")),
            "device": {"id": dev.id, "name": dev.name, "vendor": dev.vendor, "backend": dev.backend,
                       "driver": dev.driver_version},
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def write(name: str, dev, rows: list[dict], columns: list[str], notes: list[str]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = environment(dev)
    stem = f"{name}-{dev.id.replace(':', '')}-{env['machine']}"
    (RESULTS / f"{stem}.json").write_text(json.dumps({"benchmark": name, "environment": env, "rows": rows,
                                                      "notes": notes}, indent=2) + "\n")
    lines = [f"# {name} on {dev.id} ({dev.name}, {dev.vendor})", "",
             f"machine {env['machine']}, python {env['python']}, java {env['java']}, jpype {env['jpype']}, "
             f"isthmus {env['isthmus']}, driver {dev.driver_version}, {env['when']}", "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]) for c in columns) + " |")
    lines += [""] + [f"- {n}" for n in notes]
    path = RESULTS / f"{stem}.md"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return path
