"""Argument checks shared by the library ops (done before anything is enqueued).

Each check is one cheap test for the common, valid case (an open isthmus Buffer on the expected
device with the expected dtype and shape); only a failing or unusual argument goes on to the
slower path that finds out what is wrong and says so.
"""
from __future__ import annotations

from ..buffer import Buffer
from ..errors import InvalidArgumentError


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


def output(op: str, out, x: Buffer, shape: tuple, alias_ok: bool = True, nbytes: int | None = None) -> Buffer:
    """``out`` checked to take the result (device, dtype, shape), or a new buffer when None
    (``nbytes``: its size, when the caller knows it)."""
    if out is None:
        dt = x._dt or dtype(x)
        if nbytes is None:
            nbytes = dt.np.itemsize
            for s in shape:
                nbytes *= s
        return Buffer._allocate(x.device, tuple(shape), dt, nbytes)  # x's device holds x's dtype: no check
    if (out.__class__ is Buffer and out._dt is x._dt and out.device is x.device and out.shape == shape
            and (alias_ok or out._ptr != x._ptr or not out.nbytes)):
        return out
    out = buffer(op, "out", out)
    same(op, x, out=out)
    if out.shape != tuple(shape):
        raise InvalidArgumentError(f"{op}: out has shape {out.shape}, the result has shape {tuple(shape)}")
    if not alias_ok and out.nbytes and out.ptr == x.ptr:
        raise InvalidArgumentError(f"{op}: out must not be the input's memory (the op cannot run in place)")
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


def disjoint(op: str, out: Buffer, **inputs: Buffer) -> None:
    """``out`` shares no memory with any of ``inputs`` (an op that reads an input while it writes
    its output over it computes garbage). Memory is compared by range where pointers are
    addresses (CUDA: views of one allocation, foreign arrays at an offset), by allocation where
    they are handles (OpenCL's cl_mem). Zero-size buffers overlap nothing."""
    size = out.nbytes
    if not size:
        return
    o0, ranged = out._ptr, None
    for name, b in inputs.items():
        if b is None:
            continue
        b0 = b._ptr
        if b0 != o0:  # (the common case: another allocation, or a range apart)
            if ranged is None:
                ranged = out.device.pointers_are_addresses
            if not ranged or not (o0 < b0 + b.nbytes and b0 < o0 + size):
                continue
        if b.nbytes and b.device is out.device:
            raise InvalidArgumentError(
                f"{op}: out shares memory with {name}; the op reads {name} while it writes out, which "
                f"would give wrong results: pass a separate buffer as out (or out=None for a new one)")
