"""The registry of op specs: the library's (one module each in ``ops/specs``, found there, so a new
op is one file) and the tunable kernels users declare, under one namespace of names.

Tuning targets, workloads, ``isthmus bench``, the CLI, the tests and the Java SPI read it.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..buffer import Buffer
from ..errors import InvalidArgumentError
from ..graph import prepare_call
from . import specs as _specs_package
from .spec import OpSpec

_registry: dict[str, OpSpec] = {}
_shipped: set[str] = set()  # names of the specs in ops/specs


def register(spec: OpSpec) -> OpSpec:
    """Add a user's spec under its name; a name the library uses is an error (a user's kernel may
    be declared again: the newer declaration wins)."""
    if spec.name in _shipped:
        raise InvalidArgumentError(f"{spec.name!r} is an op of the library; give your kernel another name")
    _registry[spec.name] = spec
    return spec


def _load() -> None:
    for info in sorted(pkgutil.iter_modules(_specs_package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{_specs_package.__name__}.{info.name}")
        for spec in getattr(module, "SPECS", None) or (module.SPEC,):  # a module of several specs lists them
            _registry[spec.name] = spec
            _shipped.add(spec.name)


_load()
# the library's ops (isthmus.ops.<name>), in file order
OPS: dict[str, OpSpec] = {name: s for name, s in _registry.items() if s.library}


def get(name: str) -> OpSpec | None:
    """The spec registered under ``name`` (library op, a family of one, user's kernel), or None."""
    return _registry.get(name)


def names() -> list[str]:
    """Every registered name: the library's ops first, then the rest, sorted."""
    return list(OPS) + sorted(n for n in _registry if n not in OPS)


def op(name: str) -> OpSpec:
    """The op callable as ``name``: a library op, or a spec with a ``run`` that a user registered
    (``spec.run`` is the function; the Java SPI's op table is this). The library's internal
    families (``gemm_mma``: part of gemm) are not ops of their own."""
    spec = _registry.get(name)
    if spec is None or spec.run is None or (name in _shipped and not spec.library):
        users = sorted(n for n, s in _registry.items() if n not in _shipped and s.run is not None)
        raise InvalidArgumentError(f"no op {name!r}; the library has {', '.join(OPS)}"
                                   + (f"; registered ops: {', '.join(users)}" if users else ""))
    return spec


def library_op(name: str) -> OpSpec:
    """The library op ``name`` (an error listing the library's ops otherwise)."""
    try:
        return OPS[name]
    except KeyError:
        raise InvalidArgumentError(f"no op {name!r}; the library has {', '.join(OPS)}") from None


class BoundOp:
    """An op of the library (or a user's registered op) bound to a device: ``dev.library("softmax")(x)``
    is ``isthmus.ops.softmax(x)`` with the check that the buffers live on that device."""

    def __init__(self, device, name: str):
        self.device = device
        self.name = name
        self.spec = op(name)
        self._run = self.spec.run

    def __call__(self, *args, **kwargs):
        dev = self.device
        for a in (*args, *kwargs.values()):
            if isinstance(a, Buffer) and a.device is not dev:
                self._wrong_device(args, kwargs)
        return self._run(*args, **kwargs)

    def _wrong_device(self, args, kwargs):
        for i, a in enumerate((*args, *kwargs.values())):
            if isinstance(a, Buffer) and not a.closed and a.device is not self.device:
                raise InvalidArgumentError(f"{self.name} on {self.device.id}: argument {i} lives on {a.device.id}")

    def prepare(self, *args, **kwargs):
        """The op with these arguments, checked and recorded once: a Plan (one launch) or a Graph;
        ``.launch()`` replays it, ``.result`` is the op's return value."""
        return prepare_call(self.device, lambda: self(*args, **kwargs), self.name)

    def __repr__(self) -> str:
        return f"<isthmus op {self.name} on {self.device.id}>"


__all__ = ["OPS", "BoundOp", "get", "library_op", "names", "op", "register"]
