"""Graph: a sequence of launches and device copies captured once and replayed with one call.

``with dev.capture() as graph:`` records, in order, every kernel launch (eager calls, library ops,
``plan.launch()``) and device-to-device copy or fill that the capturing thread queues on ``dev``;
nothing runs while capturing. ``graph.launch()`` then replays the whole sequence:

- CUDA: the recorded steps are replayed once into a CuPy stream capture on ``dev.stream``
  (``begin_capture``/``end_capture``), giving an instantiated CUDA graph; a replay is one
  ``cudaGraphLaunch``.
- OpenCL: a pre-bound enqueue list (each launch a plan whose kernel arguments are already set).
  PyOpenCL does not expose ``cl_khr_command_buffer``, so the list is replayed from Python.

Arguments are taken when captured (like CUDA graphs): binding a plan after capturing it does not
change the graph. ``graph.bind(step, name, value)`` updates one launch of the graph: a scalar, or
a buffer of the same shape and dtype. On CUDA the graph is re-instantiated on the next launch
(CuPy exposes no per-node parameter update), on OpenCL the update is immediate.
Host transfers and synchronization cannot be captured: they raise inside the block.

>>> with dev.capture() as graph:
...     k(n, 2.0, x, y, config=cfg)
...     isthmus.ops.axpy(0.5, y, z)
>>> for _ in range(100):
...     graph.launch()
>>> graph.bind(0, "a", 3.0)     # step 0's parameter `a`
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from .buffer import Buffer
from .dtypes import lookup
from .errors import ClosedBufferError, DeviceError, InvalidArgumentError
from .plan import Plan

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device

_HOOKS = ("_launch", "_buffer_arg", "_copy", "_zero", "_upload", "_download", "_synchronize")


class _Copy:
    """A recorded device copy or fill: the call and the memory it needs kept alive."""

    __slots__ = ("go", "mems", "what")

    def __init__(self, go: Callable[[], None], mems: tuple, what: str):
        self.go, self.mems, self.what = go, mems, what


class _Empty:
    """The CUDA graph of a capture that recorded nothing."""

    @staticmethod
    def launch(stream) -> None:
        pass


_EMPTY = _Empty()


class Graph:
    """A captured sequence of launches and copies on one device; see the module docstring."""

    def __init__(self, device: "Device"):
        self.device = device
        self.steps: list = []  # Plan (a kernel launch) or _Copy, in capture order
        self._thread: int | None = None
        self._state = "new"  # new -> capturing -> ready | failed; closed
        self._pending: dict[int, tuple] = {}  # id(packed buffer arg) -> (packed, Buffer) during capture
        self._saved: dict = {}
        self._cuda = device.backend == "cuda"
        self._native = None  # CUDA: the instantiated cupy.cuda.graph.Graph
        self._dirty = True
        self._bufs: tuple = ()
        self._gos: tuple = ()
        self._owned: list[Buffer] = []  # scratch buffers the captured ops closed: the graph keeps them

    # ---- capture -----------------------------------------------------------------------------
    def __enter__(self) -> "Graph":
        dev = self.device
        if self._state != "new":
            raise InvalidArgumentError(f"this graph was already captured ({self._state}); "
                                       f"start a new one with dev.capture()")
        with dev._lock:
            if dev._capture is not None:
                raise InvalidArgumentError(f"{dev.id} is already capturing a graph; captures do not nest")
            self._thread = threading.get_ident()
            self._install()
            dev._capture = self
        self._state = "capturing"
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        dev = self.device
        with dev._lock:
            dev._capture = None
            self._uninstall()
        self._pending.clear()
        if exc_type is not None:
            self._state = "failed"
            for s in self.steps:
                if isinstance(s, Plan):
                    s.close()
            self.steps = []
            return
        self._adopt_temporaries()
        self._refresh()
        if self._cuda:
            try:
                self._instantiate()
            except Exception:
                self._state = "failed"
                raise
        self._state = "ready"

    def _install(self) -> None:
        """Route this device's launch and copy hooks through the graph for the capturing thread."""
        dev = self.device
        for name in _HOOKS:
            real = getattr(dev, name)
            self._saved[name] = real
            setattr(dev, name, self._hook(name, real))

    def _uninstall(self) -> None:
        for name in _HOOKS:
            self.device.__dict__.pop(name, None)
        self._saved.clear()

    def _hook(self, name: str, real):
        record = getattr(self, "_rec" + name)
        me = self._thread

        def hook(*args):
            if threading.get_ident() != me:
                return real(*args)
            return record(real, *args)
        return hook

    def _rec_launch(self, real, kernel, gsize, lsize, packed) -> None:
        values = []
        for p, v in zip(kernel.params, packed):
            found = self._pending.get(id(v)) if p.kind == "buffer" else None
            values.append(found[1] if found is not None else v)
        for p, v in zip(kernel.params, values):
            if p.kind == "buffer" and not isinstance(v, Buffer):
                raise InvalidArgumentError(f"graph capture: launch of {kernel.name!r} passed a buffer argument "
                                           f"({p.name}) that isthmus did not pack; it cannot be captured")
        self.steps.append(Plan._from_packed(kernel, gsize, lsize, packed, values))
        self._pending.clear()

    def _rec_buffer_arg(self, real, buf):
        packed = real(buf)
        self._pending[id(packed)] = (packed, buf)  # keeps `packed` alive, so its id stays unique
        return packed

    def _rec_copy(self, real, dst, src, nbytes) -> None:
        self.steps.append(_Copy(lambda *stream: real(dst, src, nbytes, *stream), (dst, src),
                                f"device copy of {nbytes} bytes"))

    def _rec_zero(self, real, mem, nbytes) -> None:
        self.steps.append(_Copy(lambda *stream: real(mem, nbytes, *stream), (mem,), f"fill of {nbytes} bytes"))

    def _refuse(self, what: str):
        raise InvalidArgumentError(f"{what} cannot be captured into a graph on {self.device.id}: graphs hold device "
                                   f"work only; copy to or from the host before or after the capture block")

    def _rec_upload(self, real, mem, host) -> None:
        self._refuse("a host->device copy")

    def _rec_download(self, real, mem, host) -> None:
        self._refuse("a device->host copy (to_numpy)")

    def _rec_synchronize(self, real) -> None:
        self._refuse("synchronize()")

    def _add_plan(self, plan: Plan) -> None:
        self.steps.append(plan._snapshot())

    # ---- replay ------------------------------------------------------------------------------
    @property
    def plans(self) -> list[Plan]:
        """The captured kernel launches, in order (``graph.bind(i, ...)`` counts these)."""
        return [s for s in self.steps if isinstance(s, Plan)]

    def launch(self) -> None:
        """Replay the captured sequence (asynchronous, like the launches it holds)."""
        if self._state != "ready":
            self._not_ready()
        for b in self._bufs:
            if b._dt is None:
                self._closed_error(b)
        if not self._cuda:
            for go in self._gos:
                go()
            return
        if self._dirty:
            self._instantiate()
        dev = self.device
        try:
            if dev._cp.cuda.runtime.getDevice() != dev.index:
                with dev._cp_device:
                    self._native.launch(dev.stream)
            else:
                self._native.launch(dev.stream)
        except Exception as exc:  # CUDARuntimeError
            raise DeviceError(f"graph launch on {dev.id} failed: {exc}") from exc

    def bind(self, step: int, key, value) -> "Graph":
        """Update argument ``key`` (name or index) of the ``step``-th captured launch: a scalar, or a
        buffer of the same shape and dtype as the one captured. Returns self."""
        if self._state != "ready":
            self._not_ready()
        plans = self.plans
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < len(plans):
            raise InvalidArgumentError(f"graph step {step!r} out of range: the graph holds {len(plans)} kernel "
                                       f"launches (copies are not counted and cannot be updated)")
        plan = plans[step]
        old = plan.value(key)
        if isinstance(old, Buffer) and isinstance(value, Buffer) and value.shape != old.shape:
            raise InvalidArgumentError(f"graph step {step} ({plan.kernel.name}) argument {key!r}: a captured launch "
                                       f"can only swap in a buffer of the same shape {old.shape}, got {value.shape}; "
                                       f"capture a new graph for other sizes")
        plan.bind(key, value)
        self._refresh()
        self._dirty = True
        return self

    def close(self) -> None:
        """Release the graph and the memory its launches hold. Idempotent."""
        for s in self.steps:
            if isinstance(s, Plan):
                s.close()
        for b in self._owned:
            b.close()
        self.steps, self._owned = [], []
        self._native = None
        self._bufs = self._gos = ()
        if self._state in ("ready", "failed", "new"):
            self._state = "closed"

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        return f"<isthmus.Graph {len(self.steps)} steps, {self._state}, on {self.device.id}>"

    # ---- internals ---------------------------------------------------------------------------
    def _adopt_temporaries(self) -> None:
        """Buffers closed inside the capture block (an op's scratch space) now belong to the graph."""
        adopted: dict[int, Buffer] = {}
        for plan in self.plans:
            for i, v in enumerate(plan._values):
                if isinstance(v, Buffer) and v.closed:
                    own = adopted.get(id(v))
                    if own is None:
                        own = Buffer(v.device, plan._mems[i], v.shape, lookup(v.dtype), v.nbytes)
                        adopted[id(v)] = own
                        self._owned.append(own)
                    plan._values[i] = own
            plan._refresh()

    def _refresh(self) -> None:
        seen: dict[int, Buffer] = {}
        for s in self.steps:
            if isinstance(s, Plan):
                for b in s._live:
                    seen[id(b)] = b
        self._bufs = tuple(seen.values())
        # CUDA: the plain driver call of each plan (a plan's own launch may replay a one-kernel graph,
        # which a stream capture must not record)
        self._gos = tuple((s._native.enqueue if self._cuda else s._go) if isinstance(s, Plan) else s.go
                          for s in self.steps)

    def _instantiate(self) -> None:
        """CUDA: replay the steps into a stream capture (CudaDevice._capture_graph) and instantiate it."""
        dev = self.device
        if not self._gos:
            self._native, self._dirty = _EMPTY, False
            return
        try:
            self._native = dev._capture_graph(self._gos)
        except Exception as exc:
            raise DeviceError(f"CUDA graph capture on {dev.id} failed: {exc}") from exc
        self._dirty = False

    def _not_ready(self) -> None:
        if self._state == "capturing":
            raise InvalidArgumentError("a graph cannot be launched or updated while it is being captured; "
                                       "leave the `with dev.capture()` block first")
        raise InvalidArgumentError(f"this graph is {self._state}: "
                                   + ("its capture block raised, capture it again" if self._state == "failed"
                                      else "capture one with `with dev.capture() as graph:`"))

    def _closed_error(self, buf) -> None:
        for i, plan in enumerate(self.plans):
            for p, v in zip(plan.kernel.params, plan._values):
                if v is buf:
                    raise ClosedBufferError(f"graph step {i} ({plan.kernel.name}): the buffer bound to {p.name} was "
                                            f"closed; bind an open one with graph.bind({i}, {p.name!r}, buf)")
        raise ClosedBufferError("a buffer this graph uses was closed")


def prepare_call(device: "Device", fn: Callable[[], object], what: str):
    """Record ``fn()`` (a library op) once: a Plan when it is a single launch, else a Graph.
    The op's return value (an output buffer it allocated) is kept as ``.result``."""
    graph = Graph(device)
    with graph:
        result = fn()
    plans = graph.plans
    if len(graph.steps) == 1 and len(plans) == 1:
        plan = plans[0]
        graph.steps = []
        plan.result = result
        return plan
    graph.result = result
    return graph
