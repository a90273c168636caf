"""Rewrite tests/slow_tests.txt from a GPU pass's junit.xml (``bash benchmarks/gpu_pass.sh test`` writes
it into $R): the slowest tests, longest first, which tests/conftest.py starts first under pytest-xdist.

    python -m benchmarks slow_tests /tmp/r/junit.xml [--top 60] [--min-seconds 8] [--out tests/slow_tests.txt]
"""
from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

SMOKE = "rewrites tests/slow_tests.txt from a GPU pass's junit.xml (a maintenance tool, run by hand)"
ROOT = Path(__file__).resolve().parents[2]
HEADER = """# seconds nodeid: the slowest tests of the GPU pass on the H200 machine (16 workers; {source}).
# Under pytest-xdist these start first (tests/conftest.py), longest first, so the pass ends on short tests.
# Refresh: python -m benchmarks slow_tests <junit.xml of a pass>.
"""


def nodeid(classname: str, name: str, root: Path = ROOT) -> str:
    """pytest's node id of a junit test case: ``tests.ops.test_x[.Class]`` + ``name``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return "/".join(parts) + ".py::" + name


def slowest(junit: str, top: int = 60, min_seconds: float = 8.0, root: Path = ROOT) -> list[tuple[float, str]]:
    """(seconds, node id) of the ``top`` slowest test cases of at least ``min_seconds``, longest first."""
    rows = [(float(case.get("time", 0)), nodeid(case.get("classname", ""), case.get("name", ""), root))
            for case in ET.parse(junit).getroot().iter("testcase")]
    return sorted((r for r in rows if r[0] >= min_seconds), reverse=True)[:top]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("junit", help="junit.xml of a GPU pass")
    p.add_argument("--top", type=int, default=60)
    p.add_argument("--min-seconds", type=float, default=8.0)
    p.add_argument("--out", default=str(ROOT / "tests" / "slow_tests.txt"))
    args = p.parse_args(argv)
    rows = slowest(args.junit, args.top, args.min_seconds)
    Path(args.out).write_text(HEADER.format(source=Path(args.junit).name)
                              + "".join(f"{s:.2f} {n}\n" for s, n in rows), encoding="utf-8")
    print(f"{args.out}: {len(rows)} tests, {rows[0][0] if rows else 0:.0f} s the longest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
