"""Fused elementwise expressions: ``expr.py`` parses, types and emits an expression as one OpenCL
C kernel; ``fused.py`` compiles it per device and dtypes and launches it (see :func:`fuse`)."""
from __future__ import annotations

from .fused import Fused, fuse

__all__ = ["Fused", "fuse"]
