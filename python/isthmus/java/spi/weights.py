"""``Runtime.loadSafetensors``: a checkpoint's tensors for ``io.isthmus.SafeTensors``, in one crossing."""
from __future__ import annotations

import jpype

from .buffers import BufferHandle


def load(path, device):
    """A ``java.util.Map<String, OpResult>`` (the files' order): each tensor's new buffer, owned by
    its Java handle (closing the Java buffer frees it), with its shape and dtype."""
    weights = device.load_safetensors(str(path))
    result, shape = jpype.JClass("io.isthmus.spi.OpResult"), jpype.JArray(jpype.JLong)
    out = jpype.JClass("java.util.LinkedHashMap")()
    try:
        for name, buf in weights.items():
            out.put(name, result(BufferHandle(buf, owned=True), shape(buf.shape), str(buf.dtype)))
    except BaseException:
        weights.close()
        raise
    return out
