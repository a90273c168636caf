"""The element types isthmus moves between NumPy, OpenCL C and CUDA.

bfloat16 is NumPy's through ml_dtypes, which costs about a second to import: its DType is made on
the first lookup that can concern it (the name, or any dtype once ml_dtypes is imported, as it is
by whoever holds a bfloat16 array), so ``import isthmus`` does not import it.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

import numpy as np

from .errors import UnsupportedDtypeError


@dataclass(frozen=True)
class DType:
    name: str
    np: np.dtype
    ctype: str  # OpenCL C spelling of the storage type
    acc: str  # type arithmetic is done in (float for half and bfloat16)
    is_float: bool


_TABLE = {
    "float32": DType("float32", np.dtype(np.float32), "float", "float", True),
    "float64": DType("float64", np.dtype(np.float64), "double", "double", True),
    "float16": DType("float16", np.dtype(np.float16), "half", "float", True),
    "int32": DType("int32", np.dtype(np.int32), "int", "int", False),
    "int64": DType("int64", np.dtype(np.int64), "long", "long", False),
    "uint8": DType("uint8", np.dtype(np.uint8), "uchar", "uchar", False),
    # the result of a sum of uint8, as NumPy's (its unsigned integers sum in uint64)
    "uint64": DType("uint64", np.dtype(np.uint64), "ulong", "ulong", False),
}
BUFFER_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8")

# Scalar parameter types a kernel may declare, by OpenCL C spelling.
SCALAR_CTYPES = {
    "char": np.dtype(np.int8), "uchar": np.dtype(np.uint8), "unsigned char": np.dtype(np.uint8),
    "short": np.dtype(np.int16), "ushort": np.dtype(np.uint16), "unsigned short": np.dtype(np.uint16),
    "int": np.dtype(np.int32), "uint": np.dtype(np.uint32), "unsigned int": np.dtype(np.uint32),
    "unsigned": np.dtype(np.uint32),
    "long": np.dtype(np.int64), "ulong": np.dtype(np.uint64), "unsigned long": np.dtype(np.uint64),
    "size_t": np.dtype(np.uint64), "ptrdiff_t": np.dtype(np.int64),
    "float": np.dtype(np.float32), "double": np.dtype(np.float64), "half": np.dtype(np.float16),
}
_BY_NP = {d.np: d for d in _TABLE.values()}
_BY_KEY: dict = {**_BY_NP, **{d.np.type: d for d in _TABLE.values()}, **_TABLE}
_bf16_lock = threading.Lock()


def _add_bfloat16() -> bool:
    """Make bfloat16's DType (importing ml_dtypes) and enter it in the tables; False if it was there."""
    with _bf16_lock:
        if "bfloat16" in _TABLE:
            return False
        import ml_dtypes

        # OpenCL C has no bfloat16, so kernels hold its 16-bit patterns as ushort and convert with
        # dtype.h's IS_BF16 LOAD/STORE; every device has it.
        dt = DType("bfloat16", np.dtype(ml_dtypes.bfloat16), "ushort", "float", True)
        _BY_NP[dt.np] = dt
        _BY_KEY.update({dt.np: dt, dt.np.type: dt, "bfloat16": dt})
        _TABLE["bfloat16"] = dt
        return True


def lookup(dtype) -> DType:
    """The isthmus DType for a NumPy dtype, a name ('float32') or a DType."""
    if isinstance(dtype, DType):
        return dtype
    try:
        found = _BY_KEY.get(dtype)  # np.dtype objects, NumPy scalar types and names: no parsing
    except TypeError:  # unhashable: let NumPy say what it is
        found = None
    if found is not None:
        return found
    if "bfloat16" not in _TABLE and (dtype == "bfloat16" if isinstance(dtype, str) else "ml_dtypes" in sys.modules):
        _add_bfloat16()
        return lookup(dtype)
    try:
        key = np.dtype(dtype)
    except TypeError as exc:
        raise UnsupportedDtypeError(f"unknown dtype {dtype!r}; supported: {', '.join(BUFFER_DTYPES)}") from exc
    found = _BY_NP.get(key)
    if found is None:
        raise UnsupportedDtypeError(f"dtype {key} is not supported; supported: {', '.join(BUFFER_DTYPES)}")
    return found
