"""Foreign arrays in and out without copies: CuPy, PyTorch, JAX or any DLPack / CUDA array
interface producer becomes a Buffer viewing the same memory, keeping its owner alive."""
from __future__ import annotations

import sys

import numpy as np

from .buffer import Buffer
from .dtypes import lookup
from .device import device as lookup_device
from .errors import InvalidArgumentError


_DL_CPU, _DL_CUDA = (1,), (2, 3, 13)  # kDLCPU; kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def _dlpack_kind(obj) -> int | None:
    """The DLPack device type ``obj`` says it lives on, or None (no DLPack, or it cannot say)."""
    dl = getattr(obj, "__dlpack_device__", None)
    if dl is None or not hasattr(obj, "__dlpack__"):
        return None
    try:
        kind, _ = dl()
        return int(kind)
    except Exception:
        return None


def _torch_bfloat16(obj) -> bool:
    """Whether ``obj`` is a PyTorch tensor of bfloat16, which neither NumPy's DLPack import nor the
    CUDA array interface carries as bfloat16 (torch gives typestr "<V2", ml_dtypes' str, and torch
    before 2.6 "<f2", which would read it as float16)."""
    return type(obj).__module__.startswith("torch") and str(getattr(obj, "dtype", "")) == "torch.bfloat16"


def _host_array(obj) -> np.ndarray:
    """Host data as NumPy: a CPU DLPack producer (a torch or JAX CPU tensor, any object with
    ``__dlpack__``) through ``np.from_dlpack`` (no copy), anything else through ``np.asarray``;
    a torch bfloat16 tensor through its bits (int16) as ml_dtypes' bfloat16."""
    if isinstance(obj, np.ndarray) or _dlpack_kind(obj) not in _DL_CPU:
        return np.asarray(obj)
    if _torch_bfloat16(obj):
        bits = obj.detach().contiguous().view(sys.modules["torch"].int16)
        return np.from_dlpack(bits).view(lookup("bfloat16").np)
    try:
        return np.from_dlpack(obj)
    except (BufferError, TypeError, ValueError, RuntimeError) as exc:
        raise InvalidArgumentError(f"cannot read the {type(obj).__name__} through DLPack: {exc} (pass a NumPy "
                                   f"array of one of isthmus's dtypes instead)") from exc


def asarray(obj, device=None) -> Buffer:
    """A Buffer for ``obj``.

    A CUDA array (CuPy, a PyTorch CUDA tensor, any DLPack or ``__cuda_array_interface__`` producer)
    is wrapped with no copy; the Buffer keeps the producer alive. Host data (NumPy, lists, a CPU
    DLPack producer such as a PyTorch or JAX CPU tensor) is copied to ``device`` (default:
    :func:`isthmus.device`).

    >>> t = torch.rand(1000, device="cuda")
    >>> b = isthmus.asarray(t)          # same memory as t
    """
    if isinstance(obj, Buffer):
        obj._check()
        if device is not None and lookup_device(device) is not obj.device:
            raise InvalidArgumentError(f"buffer lives on {obj.device.id}; use buf.to({device!r}) to copy it")
        return obj
    cai = _cuda_interface(obj)
    if cai is not None or _dlpack_kind(obj) in _DL_CUDA:
        return _wrap_cuda(obj, cai, device)
    return lookup_device(device).asarray(_host_array(obj))


def _cuda_interface(obj) -> dict | None:
    """``obj.__cuda_array_interface__``, or None where it has none; a producer that refuses to give
    it (a torch tensor that requires grad raises RuntimeError) is an InvalidArgumentError."""
    try:
        return getattr(obj, "__cuda_array_interface__", None)
    except Exception as exc:  # noqa: BLE001 - the producer's own refusal, of whatever type
        raise InvalidArgumentError(f"cannot wrap the {type(obj).__name__}: its CUDA array interface says "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (a torch "
                                   f"tensor that requires grad: pass tensor.detach())") from None


class _Bits:
    """A CUDA array interface of 16-bit values as uint16: how a bfloat16 producer's memory is
    wrapped (CuPy has no bfloat16 dtype; the Buffer gets isthmus's bfloat16)."""

    def __init__(self, cai: dict):
        self.__cuda_array_interface__ = {**cai, "typestr": "<u2", "descr": [("", "<u2")]}


def _wrap_cuda(obj, cai: dict | None, device) -> Buffer:
    """``obj`` wrapped with no copy: through ``cai`` (its CUDA array interface, as asarray read it)
    where it has one, else DLPack."""
    import cupy

    dtype = None
    if cai is not None and (cai.get("typestr") in ("<V2", "|V2") or _torch_bfloat16(obj)):
        arr, dtype = cupy.asarray(_Bits(cai)), "bfloat16"  # (the memory as its bits; ml_dtypes' str is "<V2")
    else:
        arr = cupy.asarray(obj) if cai is not None else cupy.from_dlpack(obj)
    if not arr.flags.c_contiguous:
        raise InvalidArgumentError(f"cannot wrap a non-contiguous array (strides {arr.strides}) without a copy; "
                                   "pass a contiguous one (e.g. cupy.ascontiguousarray / tensor.contiguous())")
    dev = lookup_device(f"cuda:{arr.device.id}")
    if device is not None and lookup_device(device) is not dev:
        raise InvalidArgumentError(f"the array lives on {dev.id}, not on {device}")
    return Buffer(dev, arr.data, tuple(arr.shape), dev.check_dtype(dtype or arr.dtype), int(arr.nbytes), owner=obj)
