"""Argument checks shared by the library ops (done before anything is enqueued)."""
from __future__ import annotations

from ..buffer import Buffer
from ..dtypes import DType
from ..errors import InvalidArgumentError


def buffer(op: str, what: str, value, ndim: int | None = None) -> Buffer:
    if not isinstance(value, Buffer):
        raise InvalidArgumentError(f"{op}: {what} must be an isthmus Buffer, got {type(value).__name__} "
                                   f"(wrap host data with dev.asarray(...) or isthmus.asarray(...))")
    value._check()
    if ndim is not None and len(value.shape) != ndim:
        raise InvalidArgumentError(f"{op}: {what} must be {ndim}-D, got shape {value.shape}")
    return value


def output(op: str, out, x: Buffer, shape: tuple, alias_ok: bool = True) -> Buffer:
    """``out`` checked to take the result (device, dtype, shape), or a new buffer when None."""
    if out is None:
        return x.device.empty(shape, x.dtype)
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
    return first.device, first._dt


def dtype_of(b: Buffer) -> DType:
    return b._dt
