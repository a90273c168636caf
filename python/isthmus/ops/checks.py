"""Argument checks shared by the library ops (done before anything is enqueued).

Each check is one cheap test for the common, valid case (an open isthmus Buffer on the expected
device with the expected dtype and shape); only a failing or unusual argument goes on to the
slower path that finds out what is wrong and says so.
"""
from __future__ import annotations

from typing import NoReturn

import numpy as np

from ..buffer import Buffer
from ..dtypes import SCALAR_CTYPES
from ..errors import InvalidArgumentError
from ..signature import Param, convert_scalar


def buffer(op: str, what: str, value, ndim: int | None = None) -> Buffer:
    if value.__class__ is Buffer and value._dt is not None and (ndim is None or len(value.shape) == ndim):
        return value
    if not isinstance(value, Buffer):
        raise InvalidArgumentError(f"{op}: {what} must be an isthmus Buffer, got {type(value).__name__} "
                                   f"(wrap host data with dev.asarray(...) or isthmus.asarray(...))")
    value._check()
    if ndim is not None and len(value.shape) != ndim:
        raise InvalidArgumentError(f"{op}: {what} must be {ndim}-D, got shape {value.shape}")
    return value


def dtype(x: Buffer):
    """``x``'s dtype; raises ClosedBufferError when x was closed since its check (a buffer closed
    by another thread between the check and the use). Hot paths write ``x._dt or dtype(x)``."""
    return x._dt or x._check()


def output(op: str, out, x: Buffer, shape: tuple, nbytes: int | None = None) -> Buffer:
    """``out`` checked to take the result (device, dtype, shape), or a new buffer when None
    (``nbytes``: its size, when the caller knows it)."""
    if out is None:
        dt = x._dt or dtype(x)
        if nbytes is None:
            nbytes = dt.np.itemsize
            for s in shape:
                nbytes *= s
        return Buffer._allocate(x.device, tuple(shape), dt, nbytes)  # x's device holds x's dtype: no check
    if out.__class__ is Buffer and out._dt is x._dt and out.device is x.device and out.shape == shape:
        return out
    out = buffer(op, "out", out)
    same(op, x, out=out)
    if out.shape != tuple(shape):
        raise InvalidArgumentError(f"{op}: out has shape {out.shape}, the result has shape {tuple(shape)}")
    return out


def same(op: str, first: Buffer, **others: Buffer) -> tuple:
    """Device and dtype shared by all buffers (error naming the odd one out otherwise)."""
    for name, b in others.items():
        if b.device is not first.device:
            raise InvalidArgumentError(f"{op}: {name} lives on {b.device.id}, the other arguments on "
                                       f"{first.device.id}; copy it with .to({first.device.id!r})")
        if b.dtype != first.dtype:
            raise InvalidArgumentError(f"{op}: {name} has dtype {b.dtype}, the other arguments {first.dtype}")
    return first.device, first._dt or dtype(first)


def like(op: str, first: Buffer, name: str, other: Buffer) -> None:
    """``other`` lives on ``first``'s device and holds its dtype (one pair: :func:`same` without its dict)."""
    if other.device is not first.device or other._dt is not first._dt:
        same(op, first, **{name: other})


def disjoint(op: str, out: Buffer, /, out_name: str = "out", **inputs: Buffer) -> None:
    """``out`` shares no memory with any of ``inputs`` (an op that reads an input while it writes
    its output over it computes garbage); ``out_name``: what the caller calls the output (gemm's
    ``c``). Memory is compared by range where pointers are addresses (``Device.pointers_are_addresses``,
    CUDA: views of one allocation, foreign arrays at an offset), by allocation where they are handles (OpenCL's
    cl_mem: a Buffer there is a whole allocation or a reshaped view of one). Zero-size buffers
    overlap nothing."""
    if not out.nbytes:
        return
    for name, b in inputs.items():
        if b is not None and _overlap(out, b):
            _refuse(op, out_name, name)


def in_place(op: str, out: Buffer, name: str, x: Buffer, /, out_name: str = "out") -> bool:
    """Whether ``out`` is ``x``'s memory exactly (the op runs in place: it must be one whose
    every item reads what it writes before writing it); False when they share nothing. A partial
    overlap (a view at another offset: CUDA) is an error, as in :func:`disjoint`."""
    if not out.nbytes or not _overlap(out, x):
        return False
    if out._ptr == x._ptr and out.nbytes == x.nbytes:
        return True
    _refuse(op, out_name, name)


def _overlap(out: Buffer, b: Buffer) -> bool:
    if not b.nbytes or b.device is not out.device:
        return False
    o0, b0 = out._ptr, b._ptr
    if out.device.pointers_are_addresses:
        return o0 < b0 + b.nbytes and b0 < o0 + out.nbytes
    return o0 == b0


def _refuse(op: str, out_name: str, name: str) -> NoReturn:
    raise InvalidArgumentError(
        f"{op}: {out_name} shares memory with {name}; {op} cannot write {out_name} in place over {name} (it "
        f"reads {name} while it writes, which would give wrong results): pass a separate buffer as {out_name}"
        + (" (or out=None for a new one)" if out_name == "out" else ""))


def scalar(op: str, name: str, value, ctype: str):
    """``value`` as the kernel's scalar parameter of type ``ctype`` takes it (a Python number in
    its range as it is, another number as a NumPy scalar of that type), else an
    InvalidArgumentError naming the op's argument ``name`` (None, a string, a bool, an array, a
    Buffer, a value out of the type's range). The launch would convert it too, but name the
    library's internal kernel in its errors (or, for None, pass it on to the driver)."""
    param = _param(ctype)
    fast = param._fast  # (a Python number in range: taken as it is, the launch packs it)
    if fast is not None and (value.__class__ is int or (value.__class__ is float and fast[3])) \
            and fast[1] <= value <= fast[2]:
        return value
    try:
        return convert_scalar(value, param, op)
    except InvalidArgumentError:
        pass
    integer = param.dtype.kind in "iu"
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        why = "not a whole number" if integer and not float(value).is_integer() else "out of its range"
        raise InvalidArgumentError(f"{op}: {name} = {value!r} does not fit the kernel's {param.ctype} "
                                   f"({why})") from None
    raise InvalidArgumentError(f"{op}: {name} must be {'an integer' if integer else 'a real number'}, got "
                               f"{_describe(value)}") from None


_PARAMS: dict = {}  # C type: a Param of that type, for convert_scalar


def _param(ctype: str) -> Param:
    param = _PARAMS.get(ctype)
    if param is None:
        param = _PARAMS[ctype] = Param("value", "scalar", ctype, SCALAR_CTYPES[ctype], False)
    return param


def scalar_fast(ctype: str) -> tuple | None:
    """:func:`scalar`'s quick test for ``ctype`` (scalar type, lowest, highest, whether a Python
    float is taken): a Python int, or float where taken, within [lowest, highest] is taken as it
    is; None where every value goes through :func:`scalar`. Declared ops test it inline."""
    return _param(ctype)._fast


def minimum(op: str, name: str, value, low: float) -> NoReturn:
    """The error for a scalar that is not a finite number >= ``low`` (NaN, inf, below it)."""
    raise InvalidArgumentError(f"{op}: {name} = {float(value):g} is out of range; it must be a finite number >= {low:g}")


def flag(op: str, name: str, value) -> bool:
    """A yes/no argument: a bool (NumPy's too); anything else is an InvalidArgumentError naming it."""
    if value.__class__ is bool or isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidArgumentError(f"{op}: {name} must be True or False, got {_describe(value)}")


def _describe(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"
