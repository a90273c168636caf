"""The kernel library: one module per family (source, tunables, grid rule, NumPy reference)."""
from __future__ import annotations

from ..buffer import Buffer
from ..errors import InvalidArgumentError
from .specs import axpy, gemm, reduce, softmax, transpose
from .spec import Family, Tunable, bucket, resolve

# Op name -> (module, family). `sum` and `max` share reduce.cl with a different OP macro.
FAMILIES: dict[str, Family] = {
    "axpy": axpy.FAMILY, "sum": reduce.SUM, "max": reduce.MAX, "softmax": softmax.FAMILY,
    "transpose": transpose.FAMILY, "gemm": gemm.FAMILY,
}
_RUN = {"axpy": axpy.run, "sum": reduce.run_sum, "max": reduce.run_max, "softmax": softmax.run,
        "transpose": transpose.run, "gemm": gemm.run}
REFERENCES = {"axpy": axpy.reference, "sum": reduce.reference_sum, "max": reduce.reference_max,
              "softmax": softmax.reference, "transpose": transpose.reference, "gemm": gemm.reference}


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise InvalidArgumentError(f"no library kernel {name!r}; the library has {', '.join(FAMILIES)}") from None


class LibraryKernel:
    """A library kernel bound to a device: ``dev.kernel("softmax")(x)`` is ``isthmus.ops.softmax(x)``
    with the check that the buffers live on that device."""

    def __init__(self, device, name: str):
        self.device = device
        self.name = name
        self.family = family(name)
        self._run = _RUN[name]

    def __call__(self, *args, **kwargs):
        dev = self.device
        for a in args:
            if isinstance(a, Buffer) and a.device is not dev:
                self._wrong_device(args, kwargs)
        for a in kwargs.values():
            if isinstance(a, Buffer) and a.device is not dev:
                self._wrong_device(args, kwargs)
        return self._run(*args, **kwargs)

    def _wrong_device(self, args, kwargs):
        for i, a in enumerate((*args, *kwargs.values())):
            if isinstance(a, Buffer) and not a.closed and a.device is not self.device:
                raise InvalidArgumentError(f"{self.name} on {self.device.id}: argument {i} lives on {a.device.id}")

    def prepare(self, *args, **kwargs):
        """The op with these arguments, checked and recorded once: a Plan (one launch) or a Graph;
        ``.launch()`` replays it, ``.result`` is the op's return value."""
        from ..graph import prepare_call

        return prepare_call(self.device, lambda: self(*args, **kwargs), self.name)

    def __repr__(self) -> str:
        return f"<isthmus library kernel {self.name} on {self.device.id}>"


def library_kernel(device, name: str) -> LibraryKernel:
    return LibraryKernel(device, name)


__all__ = ["FAMILIES", "REFERENCES", "Family", "LibraryKernel", "Tunable", "bucket", "family", "library_kernel",
           "resolve"]
