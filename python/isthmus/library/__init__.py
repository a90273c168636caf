"""The old name of the op layer (``isthmus.ops``), kept so that code written against it (scripts,
the Java provider) keeps importing: ``isthmus.library.family`` holds what ``isthmus.ops.spec`` and
``isthmus.ops.resolve`` hold, ``isthmus.library.<op>`` is ``isthmus.ops.specs.<op>``. New code
imports ``isthmus.ops``; this module goes once nothing imports it.
"""
from __future__ import annotations

import sys
import types

from ..ops import checks, resolve, spec
from ..ops.registry import FAMILIES, REFERENCES, LibraryKernel, family, library_kernel  # noqa: F401
from ..ops.specs import axpy, gemm, gemm_mma, reduce, softmax, transpose

_family = types.ModuleType(f"{__name__}.family")
_family.__dict__.update({k: v for m in (spec, resolve) for k, v in vars(m).items() if not k.startswith("__")})
for _name, _module in (("family", _family), ("axpy", axpy), ("checks", checks), ("gemm", gemm),
                       ("gemm_mma", gemm_mma), ("reduce", reduce), ("softmax", softmax), ("transpose", transpose)):
    sys.modules[f"{__name__}.{_name}"] = _module
    globals()[_name] = _module
Family, Tunable, bucket = spec.Family, spec.Tunable, spec.bucket
