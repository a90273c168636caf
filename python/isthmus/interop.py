"""Foreign arrays in and out without copies: CuPy, PyTorch, JAX or any DLPack / CUDA array
interface producer becomes a Buffer viewing the same memory, keeping its owner alive."""
from __future__ import annotations

import numpy as np

from .buffer import Buffer
from .device import device as lookup_device
from .errors import InvalidArgumentError


def _is_cuda_object(obj) -> bool:
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    dl = getattr(obj, "__dlpack_device__", None)
    if dl is None:
        return False
    try:
        kind, _ = dl()
    except Exception:
        return False
    return int(kind) in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def asarray(obj, device=None) -> Buffer:
    """A Buffer for ``obj``.

    A CUDA array (CuPy, a PyTorch CUDA tensor, any DLPack or ``__cuda_array_interface__`` producer)
    is wrapped with no copy; the Buffer keeps the producer alive. Host data (NumPy, lists) is copied
    to ``device`` (default: :func:`isthmus.device`).

    >>> t = torch.rand(1000, device="cuda")
    >>> b = isthmus.asarray(t)          # same memory as t
    """
    if isinstance(obj, Buffer):
        obj._check()
        if device is not None and lookup_device(device) is not obj.device:
            raise InvalidArgumentError(f"buffer lives on {obj.device.id}; use buf.to({device!r}) to copy it")
        return obj
    if _is_cuda_object(obj):
        return _wrap_cuda(obj, device)
    return lookup_device(device).asarray(np.asarray(obj))


def _wrap_cuda(obj, device) -> Buffer:
    import cupy

    arr = cupy.asarray(obj) if hasattr(obj, "__cuda_array_interface__") else cupy.from_dlpack(obj)
    if not arr.flags.c_contiguous:
        raise InvalidArgumentError(f"cannot wrap a non-contiguous array (strides {arr.strides}) without a copy; "
                                   "pass a contiguous one (e.g. cupy.ascontiguousarray / tensor.contiguous())")
    dev = lookup_device(f"cuda:{arr.device.id}")
    if device is not None and lookup_device(device) is not dev:
        raise InvalidArgumentError(f"the array lives on {dev.id}, not on {device}")
    return Buffer(dev, arr.data, tuple(arr.shape), dev.check_dtype(arr.dtype), int(arr.nbytes), owner=obj)
