"""The import graph follows the layers: core (device, buffer, kernel, plan, graph, ...) imports no
backend, op, fuser or tuner; a backend imports core only; the op library imports core only; so no
import circle spans core, backends and ops. Read from the sources (every import statement,
module-level or inside a function; ``if TYPE_CHECKING:`` blocks are only annotations)."""
import ast
from pathlib import Path

import isthmus

ROOT = Path(isthmus.__file__).resolve().parent
CORE = {"_version", "knobs", "errors", "dtypes", "buffer", "device", "launch", "signature", "program", "kernel",
        "program_cache", "memo", "plan", "weights", "jsonsafe",
        "graph"}


def _modules() -> dict[str, Path]:
    out = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _imports(name: str, path: Path, modules: dict) -> set[str]:
    """The isthmus modules ``name`` imports anywhere but under ``if TYPE_CHECKING:``."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            found.update(subs if len(subs) == len(node.names) else [target, *subs])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(ast.parse(path.read_text()))
    return {m for m in found if m in modules and m != "isthmus"}


def _layer(module: str) -> str:
    rest = module.split(".")[1:]
    if rest and rest[0] in CORE:
        return "core"
    return rest[0] if rest and rest[0] in ("backends", "ops") else "other"


def test_core_backends_and_ops_import_only_downwards():
    modules = _modules()
    allowed = {"core": {"core"}, "backends": {"core", "backends"}, "ops": {"core", "ops"}}
    wrong = []
    for name, path in modules.items():
        layer = _layer(name)
        if layer in allowed:
            wrong += [f"{name} ({layer}) imports {m} ({_layer(m)})" for m in sorted(_imports(name, path, modules))
                      if _layer(m) not in allowed[layer]]
    assert not wrong, "\n".join(wrong)


def test_no_import_circle_spans_core_backends_and_ops():
    modules = _modules()
    graph = {n: _imports(n, p, modules) for n, p in modules.items() if _layer(n) in ("core", "backends", "ops")}
    layers = {}
    for start in graph:  # every module that reaches itself again through another layer's module
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m in seen or m not in graph:
                continue
            seen.add(m)
            todo += graph[m]
        if start in seen:
            layers[start] = {_layer(m) for m in seen}
    spanning = {m: sorted(ls) for m, ls in layers.items() if len(ls) > 1}
    assert not spanning, spanning


def _device_probe(node) -> bool:
    """``<x>.backend == "cuda"``-like comparisons, and hasattr/getattr on a device."""
    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "backend":
        return any(isinstance(c, ast.Constant) and c.value in ("cuda", "opencl") for c in node.comparators)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("hasattr", "getattr") and node.args:
        target = node.args[0]
        return getattr(target, "id", None) in ("dev", "device") or getattr(target, "attr", None) in ("dev", "device")
    return False


def test_backend_differences_are_hooks_declared_on_device():
    """No module outside backends/ asks which backend a device is or probes it for an attribute:
    what differs is a hook or attribute declared, with a default, on Device. (isthmus.ray.claim
    picks devices by the backend Ray's user asked for: a choice by name, not a probe.)"""
    probes = [f"{name}:{node.lineno}" for name, path in _modules().items()
              if not name.startswith("isthmus.backends") and name != "isthmus.ray.claim"
              for node in ast.walk(ast.parse(path.read_text())) if _device_probe(node)]
    assert not probes, probes
