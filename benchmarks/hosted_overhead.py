"""Host time per call and boot time of a Java application hosted by isthmus (`isthmus java`) vs hosted
by the JVM (`java -jar`, the runtime booted in process on the first Isthmus.get(), JDK 22+; issue 31).

    python -m benchmarks hosted_overhead [--quick] [--device ID] [--out DIR] [--java-home JDK]

One Java program (io.isthmus.bench.HostedBench, compiled by `make jar` into target/test-classes) runs
both ways on the same JDK, the modes alternating, each run a fresh process: host nanoseconds per call of
``Ops.sum`` (into a buffer), an eager kernel launch and ``Plan.launch`` from the main thread, a thread of
``Isthmus.executor`` and a plain Java thread (System.nanoTime around each of 10 chunks of a loop, each
synchronized at its end: the least chunk and the mean);
the boot: from spawning the process to the first ``Isthmus.get()`` returning, and that call alone.
Targets (issue 31): the JVM-hosted mode within 10% of `isthmus java` per call; its boot <= 3 s.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from benchmarks import _results
from benchmarks._jvm import TEST_CLASSES

SMOKE = ["--quick", "--out", "{out}", "--device", "{device}"]
MAIN = "io.isthmus.bench.HostedBench"
CALLS = ["Ops.sum", "kernel launch", "Plan.launch"]
THREADS = ["main", "executor", "plain"]


def _feature(home: Path) -> int:
    try:
        m = re.search(r'^JAVA_VERSION="(\d+)', (home / "release").read_text(), re.M)
    except OSError:
        return 0
    return int(m.group(1)) if m else 0


def java_home(given: str | None) -> Path:
    """A JDK or JRE 22+: ``given``, else JAVA_HOME, else the newest under /usr/lib/jvm."""
    candidates = [Path(given)] if given else []
    if not given:
        if os.environ.get("JAVA_HOME"):
            candidates.append(Path(os.environ["JAVA_HOME"]))
        root = Path("/usr/lib/jvm")
        if root.is_dir():
            candidates += sorted(root.iterdir(), key=_feature, reverse=True)
    for home in candidates:
        if _feature(home) >= 22 and (home / "bin" / "java").is_file():
            return home.resolve()
    raise SystemExit(f"hosted_overhead needs a Java 22+ runtime (the FFM API); none among {[str(c) for c in candidates]}: "
                     "pass --java-home")


def isthmus_jar() -> Path:
    from isthmus import knobs
    from isthmus.java import jvm

    jar = jvm.packaged_jar()
    if jar is None:  # the GPU machine: the jar comes through ISTHMUS_CLASSPATH
        jar = next((Path(e) for e in knobs.classpath() if jvm._holds_isthmus(str(e))), None)  # noqa: SLF001
    if jar is None:
        raise SystemExit("the isthmus jar is missing: run `make jar` (or set ISTHMUS_CLASSPATH to it)")
    return jar


def launcher_jar(folder: Path, entries: list[Path]) -> Path:
    """A jar whose manifest names the main class and the class path: what `java -jar` runs."""
    urls = " ".join(p.resolve().as_uri() + ("/" if p.is_dir() else "") for p in entries)
    lines, line = [], f"Class-Path: {urls}"
    while len(line.encode()) > 70:  # manifest lines: 72 bytes, continued with a leading space
        lines.append(line[:70])
        line = " " + line[70:]
    lines.append(line)
    manifest = "Manifest-Version: 1.0\r\nMain-Class: " + MAIN + "\r\n" + "\r\n".join(lines) + "\r\n\r\n"
    jar = folder / "hosted-bench.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", manifest)
    return jar


def run_once(cmd: list[str], env: dict, timeout: float) -> dict:
    t0 = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0 or "done" not in done.stdout.split("\n"):
        raise SystemExit(f"{' '.join(cmd)} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    out = {"results": {}, "stdout": done.stdout}
    for line in done.stdout.splitlines():
        if line.startswith("result "):
            key, mean, least = line[len("result "):].rsplit(" ", 2)
            out["results"][key] = (float(mean), float(least))
        elif line.startswith("boot "):
            f = line.split()
            boot = dict(zip(f[1::2], (int(v) for v in f[2::2])))
            out["spawn_to_ready_ms"] = boot["get_end"] - t0 * 1e3
            out["get_ms"] = boot["get_end"] - boot["get_start"]
        elif line.startswith("device "):
            out["device"], out["java"] = line.split()[1], line.split()[3]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one run per mode, few iterations (a smoke run)")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    p.add_argument("--out", default=None, help="folder for hosted_overhead-<backend>-<device>.md/.json")
    p.add_argument("--java-home", default=None, help="the JDK/JRE 22+ both modes run on (default: JAVA_HOME, "
                                                     "else the newest in /usr/lib/jvm)")
    p.add_argument("--repeats", type=int, default=None, help="processes per mode (default 3, --quick 1)")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    args = p.parse_args(argv)
    import isthmus
    from isthmus import measure
    from isthmus.java import hosted

    if not (TEST_CLASSES / "io" / "isthmus" / "bench" / "HostedBench.class").exists():
        raise SystemExit(f"the Java bench classes are missing ({TEST_CLASSES}): build them first with `make jar`")
    dev = isthmus.device(args.device)
    iters = 300 if args.quick else 5000
    repeats = args.repeats or (1 if args.quick else 3)
    home = java_home(args.java_home)
    java = str(home / "bin" / "java")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "JAVA_TOOL_OPTIONS", "ISTHMUS_JVM")}
    env.update(JAVA_HOME=str(home), ISTHMUS_PYTHON=sys.executable, ISTHMUS_DEVICE=dev.id)
    with tempfile.TemporaryDirectory() as tmp:
        jar = launcher_jar(Path(tmp), [isthmus_jar(), TEST_CLASSES, hosted.jpype_jar()])
        modes = {
            "isthmus java": [sys.executable, "-m", "isthmus.java", "-cp", str(TEST_CLASSES), MAIN, str(iters), dev.id],
            "java -jar": [java, "--enable-native-access=ALL-UNNAMED", "-jar", str(jar), str(iters), dev.id],
        }
        runs: dict[str, list[dict]] = {m: [] for m in modes}
        for _ in range(repeats):  # alternating, so drift on a shared machine hits both
            for mode, cmd in modes.items():
                runs[mode].append(run_once(cmd, env, timeout=120 if args.quick else 300))
    rows = []
    worst = 0.0
    for thread in THREADS:
        for call in CALLS:
            key = f"{thread}|{call}"
            # least: the least chunk over every process of the mode (other work on a shared machine adds
            # to a call's time, never takes from it); median: of the processes' loop means
            a, b = (min(r["results"][key][1] for r in runs[m]) / 1e3 for m in modes)
            am, bm = (statistics.median(r["results"][key][0] for r in runs[m]) / 1e3 for m in modes)
            worst = max(worst, b / a)
            rows.append({"thread": thread, "call": call, "isthmus java us": a, "java -jar us": b,
                         "java -jar / isthmus java": b / a, "isthmus java us (median)": am,
                         "java -jar us (median)": bm})
    boot = {m: statistics.median(r["spawn_to_ready_ms"] for r in rs) / 1e3 for m, rs in runs.items()}
    get = {m: statistics.median(r["get_ms"] for r in rs) / 1e3 for m, rs in runs.items()}
    rows += [{"thread": "boot", "call": "spawn to Isthmus.get() returned (s)", "isthmus java us": boot["isthmus java"],
              "java -jar us": boot["java -jar"], "java -jar / isthmus java": boot["java -jar"] / boot["isthmus java"],
              "isthmus java us (median)": boot["isthmus java"], "java -jar us (median)": boot["java -jar"]},
             {"thread": "boot", "call": "first Isthmus.get() alone (s)", "isthmus java us": get["isthmus java"],
              "java -jar us": get["java -jar"], "java -jar / isthmus java": float("nan"),
              "isthmus java us (median)": get["isthmus java"], "java -jar us (median)": get["java -jar"]}]
    java_version = runs["java -jar"][0].get("java", "?")
    report = measure.Report("hosted_overhead", f"hosted_overhead on {dev.id} ({dev.name}, {dev.vendor})", dev,
                            data={"rows": rows, "iters": iters, "repeats": repeats, "java": java_version,
                                  "java_home": str(home)}, extra={"java": java_version}, notes=[
        f"{iters} calls per loop (10 chunks, each synchronized at its end) after 100 warm-up calls; {repeats} "
        f"processes per mode, the modes alternating; Java {java_version} ({home}) for both",
        "us columns: the least chunk's time per call over the mode's processes (what the target compares: other "
        "work on a shared machine only adds time); '(median)': the median over processes of each loop's mean",
        "'isthmus java': the JVM started by Python (python -m isthmus.java); 'java -jar': the JVM started by the "
        "java launcher, the runtime booted in process on the first Isthmus.get() (io.isthmus.InProcess)",
        "boot rows are seconds (medians over processes): from spawning the process to the first Isthmus.get() "
        "returning (Python's start, the JVM's and the runtime's), and that first call alone",
        f"target: java -jar within 10% of isthmus java per call: worst {worst:.2f}x "
        f"({'met' if worst <= 1.10 else 'NOT met'}); boot <= 3 s: {boot['java -jar']:.2f} s "
        f"({'met' if boot['java -jar'] <= 3.0 else 'NOT met'})"])
    report.add_records(rows, ["thread", "call", "isthmus java us", "java -jar us", "java -jar / isthmus java",
                              "isthmus java us (median)", "java -jar us (median)"])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
