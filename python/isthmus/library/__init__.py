"""The old name of the op layer (``isthmus.ops``), kept so that code written against it (scripts,
the Java provider) keeps importing: ``isthmus.library.family`` is ``isthmus.ops.spec``, the other
modules keep their names. New code imports ``isthmus.ops``."""
from __future__ import annotations

import sys

from ..ops import checks, registry, spec
from ..ops.specs import axpy, gemm, gemm_mma, reduce, softmax, transpose
from ..ops.registry import *  # noqa: F401,F403
from ..ops.registry import FAMILIES, REFERENCES, family, library_kernel  # noqa: F401

for _name, _module in (("family", spec), ("axpy", axpy), ("checks", checks), ("gemm", gemm),
                       ("gemm_mma", gemm_mma), ("reduce", reduce), ("softmax", softmax), ("transpose", transpose)):
    sys.modules[f"{__name__}.{_name}"] = _module
