"""The import graph follows the layers: core (device, buffer, kernel, plan, graph, ...) imports no
backend, op, fuser or tuner; a backend imports core only; the op library imports core only; and no
import circle closes anywhere in the package. Read from the sources (every import statement,
module-level or inside a function; ``if TYPE_CHECKING:`` blocks are only annotations)."""
import ast
from pathlib import Path

import isthmus

ROOT = Path(isthmus.__file__).resolve().parent
CORE = {"_version", "knobs", "errors", "dtypes", "buffer", "device", "launch", "signature", "program", "kernel",
        "program_cache", "memo", "plan", "record", "weights", "jsonsafe",
        "graph", "interop"}


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


def test_the_root_holds_only_the_core():
    """Issue 25 item 6: the tools have rooms of their own (``isthmus bench``, ``demo`` and ``devices``
    in cli/, the workloads in ops/); beside the core at the package's root only its entry points."""
    beside = {f.stem for f in ROOT.glob("*.py")} - CORE - {"__init__", "__main__"}
    assert not beside, f"modules at the root of isthmus that are not core: {sorted(beside)}"


def _circles(graph: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative),
    each as (a shortest circle through its first module, ``a -> b -> ... -> a``; its modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next((m for m in edges if m not in index or m in stack), None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(component) > 1:
                        found.append((_circle(graph, set(component)), sorted(component)))
            elif step in index:
                low[node] = min(low[node], index[step])
            else:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph[step]))))
    return found


def _circle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest circle from the component's first module back to itself (breadth first)."""
    start = min(component)
    came = {start: None}
    todo = [start]
    for node in todo:
        for m in sorted(graph[node] & component):
            if m == start:
                path = [node]
                while came[path[-1]] is not None:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if m not in came:
                came[m] = node
                todo.append(m)
    raise AssertionError(f"{sorted(component)} is no strongly connected component")


def test_no_import_circle_anywhere_in_the_package():
    """Issue 25 item 6: no module reaches itself again through imports, module-level or inside a
    function, anywhere in the package (a lower module that needs an upper one is handed it:
    ``device.plugins``, ``java.spi.buffers.device_handle``)."""
    modules = _modules()
    graph = {n: _imports(n, p, modules) for n, p in modules.items()}
    circles = _circles(graph)
    assert not circles, "import circles:\n" + "\n".join(
        f"{' -> '.join(circle)} (of the circling modules {', '.join(members)})" for circle, members in circles)


def test_the_circle_finder_names_each_circle():
    """The check above finds circles of any length, one per strongly connected component, and
    nothing in a graph without one."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"a"}}
    assert _circles(graph) == [(["a", "b", "c", "a"], ["a", "b", "c"]), (["e", "f", "e"], ["e", "f"])]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


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
