"""opencl/README.md's per-kernel part, written from the op specs, so that the tunables, their
values, defaults and restrictions are stated once (in the specs) and the README cannot drift:

    python -m isthmus.ops.docs opencl/README.md            # rewrite the part below the marker
    python -m isthmus.ops.docs --check opencl/README.md    # exit 1 when it is out of date

The text above the marker (the contracts every kernel shares) is written by hand.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import registry

MARK = "<!-- written from the op specs by `python -m isthmus.ops.docs`; edit the specs, not below -->"


def _values(values: tuple) -> str:
    return ", ".join(str(v) for v in values)


def section(spec) -> str:
    """One spec as markdown: kernel, dtypes, problem, tunables and restrictions."""
    cpu = dict(spec.cpu_defaults)
    lines = [f"## {spec.source}: {spec.name}", "",
             f"{spec.summary or spec.name}. Entry points: {', '.join(f'`{e}`' for e in spec.entries)}; "
             f"dtypes: {', '.join(spec.dtypes)}; problem sizes: {', '.join(spec.problem)}"
             + (f"; fixed defines: {', '.join(f'`{k}={v}`' for k, v in spec.defines)}" if spec.defines else "")
             + (f"; stored as: {', '.join(f'{d} as `{c}`' for d, c in spec.storage)}" if spec.storage else "")
             + "".join(f"; {dt} runs the family {fam.name}" for dt, fam in spec.families)
             + (f"; variant flags, each value set tuned apart: {', '.join(f'{f.name} (`{f.define}`)' for f in spec.variants)}"
                if spec.variants else "") + ".",
             "", "| tunable | values | default | CPU default | only when |", "| --- | --- | --- | --- | --- |"]
    for t in spec.tunables:
        when = f"{t.when[0]} in {_values(t.when[1])}" if t.when else ""
        lines.append(f"| {t.name} | {_values(t.values)} | {t.default} | {cpu.get(t.name, '')} | {when} |")
    if spec.restrictions:
        lines += ["", "Restrictions (over the tunables, the problem sizes, `max_work_group_size`, `local_mem_size`, "
                      "`acc_size`, `is_cpu`):", ""]
        lines += [f"- `{r}`" for r in spec.restrictions]
    if spec.rule is not None:
        lines += ["", f"Without a tuned config, the spec's rule picks the tunables from the problem's shape "
                      f"(`{spec.rule.__module__}.{spec.rule.__name__}`)."]
    return "\n".join(lines)


def render(text: str) -> str:
    """``text`` (the README) with everything below the marker rewritten from the registry."""
    head = text.split(MARK, 1)[0].rstrip() + "\n\n"
    shipped = [registry.get(n) for n in registry.names() if n in registry._shipped]
    return head + MARK + "\n\n" + "\n\n".join(section(s) for s in shipped) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m isthmus.ops.docs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the README is not what the specs give")
    ap.add_argument("readme", type=Path)
    args = ap.parse_args(argv)
    text = args.readme.read_text()
    want = render(text)
    if not args.check:
        args.readme.write_text(want)
    elif want != text:
        print(f"{args.readme} is out of date: run python -m isthmus.ops.docs {args.readme}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
