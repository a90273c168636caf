"""opencl/README.md's per-kernel part and the typed stub of ``isthmus.ops`` (``ops/__init__.pyi``),
written from the op specs, so that the signatures, tunables, their values, defaults and
restrictions are stated once (in the specs) and neither the README nor the stub can drift:

    python -m isthmus.ops.docs opencl/README.md            # rewrite the part below the marker, and the stub
    python -m isthmus.ops.docs --check opencl/README.md    # exit 1 when either is out of date

The text above the marker (the contracts every kernel shares) is written by hand.
"""
from __future__ import annotations

import argparse
import re
import inspect
import sys
from pathlib import Path

from .. import knobs
from . import registry
from .spec import OpSpec, Scalar, Tensor

MARK = "<!-- written from the op specs by `python -m isthmus.ops.docs`; edit the specs, not below -->"
STUB = Path(__file__).with_name("__init__.pyi")


def _values(values: tuple) -> str:
    return ", ".join(str(v) for v in values)


def _annotation(spec: OpSpec, p: inspect.Parameter) -> str:
    """The type of one parameter of an op's public function: a declared op's Tensor is a Buffer and
    its Scalar a number; otherwise read from the default (none: a Buffer; None: the output, a
    Buffer or None, else anything; a bool; a number)."""
    if isinstance(p.annotation, str) and p.annotation:  # the run's own annotation (a string: postponed evaluation)
        return p.annotation
    declared = {a.name: a for a in spec.args}
    if isinstance(declared.get(p.name), Tensor):
        return "Buffer | None" if declared[p.name].optional else "Buffer"
    if isinstance(declared.get(p.name), Scalar):
        return "float"
    if p.default is inspect.Parameter.empty:
        return "Buffer"
    if p.default is None:
        return "Buffer | None" if p.name in (spec.out_arg, "out") else "Any"
    return "bool" if isinstance(p.default, bool) else "float" if isinstance(p.default, (int, float)) else "Any"


def signature(spec: OpSpec) -> str:
    """``name(params) -> Buffer``: an op's public function, typed."""
    parts, star = [], False
    for p in inspect.signature(spec.run).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(f"{p.name}: {_annotation(spec, p)}" + ("" if p.default is inspect.Parameter.empty else " = ..."))
    # a run annotated with what it returns says so (cross_entropy: the loss, or a tuple with grad=True)
    returns = inspect.signature(spec.run).return_annotation
    returns = returns if isinstance(returns, str) and returns else "Buffer"
    return f"{spec.name}({', '.join(parts)}) -> {returns}"


def _wrapped(sig: str, width: int = 116) -> str:
    """A long signature with its parameters on lines of their own width (the stub's line length)."""
    if len(sig) <= width:
        return sig
    head, rest = sig.split("(", 1)
    params, tail = rest.rsplit(")", 1)
    lines, line = [], ""
    for p in params.split(", "):
        if line and len(line) + len(p) + 2 > width - 4:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {p}" if line else p
    return head + "(\n        " + "\n        ".join(lines + [line]) + f",\n){tail}"


def stub() -> str:
    """``ops/__init__.pyi``: each library op's typed signature, with its docstring's first paragraph."""
    lines = ['"""Typed signatures of isthmus.ops, written from the op specs by `python -m isthmus.ops.docs`',
             '(edit the specs, not this file)."""', "from typing import Any", "", "from ..buffer import Buffer", ""]
    for name, spec in registry.OPS.items():
        first = (inspect.getdoc(spec.run) or spec.summary).split("\n\n", 1)[0]
        lines += ["", f"def {_wrapped(signature(spec))}:", '    """' + first.replace('"""', "'''").replace("\\", "\\\\")
                  .replace("\n", "\n    ") + '"""']
    lines += ["", "", f"__all__ = {list(registry.OPS)!r}", ""]
    return "\n".join(lines)


def section(spec) -> str:
    """One spec as markdown: call, kernel, dtypes, problem, tunables and restrictions."""
    cpu = dict(spec.cpu_defaults)
    call = f"Call: `isthmus.ops.{signature(spec)}`. " if spec.library and spec.run is not None else ""
    lines = [f"## {spec.source}: {spec.name}", "",
             f"{spec.summary or spec.name}. {call}Entry points: {', '.join(f'`{e}`' for e in spec.entries)}; "
             f"dtypes: {', '.join(spec.dtypes)}; problem sizes: {', '.join(spec.problem)}"
             + (f"; fixed defines: {', '.join(f'`{k}={v}`' for k, v in spec.defines)}" if spec.defines else "")
             + (f"; stored as: {', '.join(f'{d} as `{c}`' for d, c in spec.storage)}" if spec.storage else "")
             + "".join(f"; {dt} runs the family {fam.name}" for dt, fam in spec.families)
             + (f"; variant flags, each value set tuned apart: {', '.join(f'{f.name} (`{f.define}`)' for f in spec.variants)}"
                if spec.variants else "") + ".",
             "", "| tunable | values | default | CPU default | only when |", "| --- | --- | --- | --- | --- |"]
    for t in spec.tunables:
        when = " and ".join(f"{name} in {_values(values)}" for name, values in t.conditions())
        lines.append(f"| {t.name} | {_values(t.values)} | {t.default} | {cpu.get(t.name, '')} | {when} |")
    if spec.restrictions:
        lines += ["", "Restrictions (over the tunables, the problem sizes, `max_work_group_size`, `local_mem_size`, "
                      "`acc_size`, `is_cpu`):", ""]
        lines += [f"- `{r}`" for r in spec.restrictions]
    if spec.rule is not None:
        lines += ["", f"Without a tuned config, the spec's rule picks the tunables from the problem's shape "
                      f"(`{spec.rule.__module__}.{spec.rule.__name__}`)."]
    return "\n".join(lines)


PRELUDE = ("<!-- prelude built-ins: written from cuda_prelude.h by `python -m isthmus.ops.docs` -->",
           "<!-- end of prelude built-ins -->")
_DEVICE_FN = re.compile(r"__device__ __forceinline__ ([\w ]+?\**) (\w+)\(([^)]*)\)\s*\{(.*?)\n?\}\n", re.S)
_MACRO_FN = re.compile(r"^#define (\w+)\(([^)]*)\) (.+)$", re.M)


def prelude_builtins() -> dict:
    """What ``cuda_prelude.h`` gives kernels: ``mapped``, {OpenCL C name: [(its parameters, what CUDA
    runs)]} for its functions and function-like macros; ``cuda``, the names it lists as CUDA's own."""
    text = (knobs.kernel_dir() / "cuda_prelude.h").read_text()
    mapped: dict = {}
    for name, params, body in _MACRO_FN.findall(text):
        mapped.setdefault(name, []).append((params, body.strip()))
    helpers = {}  # the prelude's own helpers (isthmus_*): shown as the PTX instruction they run
    for _ret, name, params, body in _DEVICE_FN.findall(text):
        body = " ".join(body.replace("return ", "").split()).rstrip(";")
        if name.startswith("isthmus_"):
            helpers[name] = re.search(r'asm\("([\w.]+)', body).group(1)
            continue
        if body.startswith("d == 0 ? "):  # the work-item functions: dimension 0 shown
            body = body[len("d == 0 ? "):].split(" : d == 1")[0] + " (y, z likewise)"
        params = ", ".join(" ".join(p.split()[:-1]) for p in params.split(","))
        mapped.setdefault(name, []).append((params, body))
    for forms in mapped.values():
        forms[:] = [(p, re.sub(r"isthmus_\w+", lambda m: f"PTX {helpers[m.group(0)]}", b)) for p, b in forms]
    listed = re.search(r"portable by name \(.*?\):(.*?)\*/", text, re.S).group(1)
    constants = re.findall(r"^#define ([A-Z][A-Z0-9_]*) \S", text, re.M)
    return {"mapped": mapped, "cuda": sorted(w for w in listed.replace("*", " ").split()),
            "constants": [c for c in constants if not c.startswith("ISTHMUS")]}


def prelude_table() -> str:
    """The prelude's built-ins as a markdown table."""
    found = prelude_builtins()
    lines = ["| in the kernels | on CUDA (cuda_prelude.h) |", "| --- | --- |"]
    for name, forms in found["mapped"].items():
        sig = " / ".join(f"({p})" for p, _ in forms)
        shown = f"`{name}`" if name.startswith("atomic_") else f"`{name}{sig}`"
        cuda = " / ".join(dict.fromkeys(b for _, b in forms))
        lines.append(f"| {shown} | `{cuda}` |")
    lines.append(f"| {', '.join(f'`{n}`' for n in found['cuda'])} | CUDA's own, by the same name |")
    lines.append(f"| {', '.join(f'`{n}`' for n in found['constants'])} | constants (no C headers under NVRTC) |")
    return "\n".join(lines)


def render(text: str) -> str:
    """``text`` (the README) with the prelude's table between its markers and everything below the
    marker rewritten from the registry."""
    if PRELUDE[0] in text:
        before, rest = text.split(PRELUDE[0], 1)
        text = before + PRELUDE[0] + "\n" + prelude_table() + "\n" + PRELUDE[1] + rest.split(PRELUDE[1], 1)[1]
    head = text.split(MARK, 1)[0].rstrip() + "\n\n"
    shipped = [registry.get(n) for n in registry.names() if n in registry._shipped]
    return head + MARK + "\n\n" + "\n\n".join(section(s) for s in shipped) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m isthmus.ops.docs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the README or the stub is not what the specs give")
    ap.add_argument("readme", type=Path)
    args = ap.parse_args(argv)
    stale = []
    for path, want in ((args.readme, render(args.readme.read_text())), (STUB, stub())):
        have = path.read_text() if path.exists() else None
        if want == have:
            continue
        if args.check:
            stale.append(str(path))
        else:
            path.write_text(want)
    if stale:
        print(f"{', '.join(stale)}: out of date; run python -m isthmus.ops.docs {args.readme}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
