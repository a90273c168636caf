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
a buffer of the same shape and dtype; ``graph.bind_all(name, value)`` every launch with a parameter
of that name (an op's per-step scalars, by the name its documentation gives, whatever its launches). On CUDA the graph is re-instantiated on the next launch
(CuPy exposes no per-node parameter update), on OpenCL the update is immediate.
Host transfers and synchronization cannot be captured: they raise inside the block.

>>> with dev.capture() as graph:
...     k(n, 2.0, x, y, config=cfg)
...     isthmus.ops.axpy(0.5, y, z)
>>> for _ in range(100):
...     graph.launch()
>>> graph.bind(0, "a", 3.0)     # step 0's parameter `a`
>>> graph.bind_all("seed", 7)   # parameter `seed` of every launch that has one (isthmus.ops.sample's)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .buffer import Buffer
from .dtypes import lookup
from .errors import ClosedBufferError, DeviceError, InvalidArgumentError
from .plan import Plan
from .record import Recorder

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device


class _Capture(Recorder):
    """The recorder a Graph installs on its device while capturing: it keeps each launch as a Plan
    and each device copy or fill as the call that queues it (on the device's queue or stream, or on
    the one it is given; it holds the memory it uses), in order, and refuses host transfers."""

    def __init__(self, graph: "Graph"):
        super().__init__()
        self.graph = graph

    def launch(self, device, kernel, gsize, lsize, args) -> None:
        values = list(args)
        for i, p in enumerate(kernel.params):
            if p.kind == "buffer" and values[i] is not None and not isinstance(values[i], Buffer):
                raise InvalidArgumentError(f"graph capture: launch of {kernel.name!r} passed a buffer argument "
                                           f"({p.name}) that is not an isthmus Buffer; it cannot be captured")
        packed = [device.launcher.buffer_arg(v) if v.__class__ is Buffer else v for v in values]
        for i, t in enumerate(kernel._types):
            if t is not None and packed[i].__class__ is not t:
                packed[i] = values[i] = kernel._convert(i, packed[i])
        self.graph.steps.append(Plan._from_packed(kernel, gsize, lsize, packed, values))

    def plan(self, plan: Plan) -> None:
        self.graph.steps.append(plan._snapshot())

    def copy(self, device, dst, src, nbytes) -> None:
        self.graph.steps.append(lambda *stream: device.allocator.copy(dst, src, nbytes, *stream))

    def zero(self, device, mem, nbytes) -> None:
        self.graph.steps.append(lambda *stream: device.allocator.zero(mem, nbytes, *stream))

    def host(self, device, what: str) -> None:
        raise InvalidArgumentError(f"{what} cannot be captured into a graph on {device.id}: graphs hold device "
                                   f"work only; copy to or from the host before or after the capture block")


class Graph:
    """A captured sequence of launches and copies on one device; see the module docstring."""

    def __init__(self, device: "Device"):
        self.device = device
        self.steps: list = []  # a Plan (a kernel launch) or a device copy's or fill's call, in capture order
        self._state = "new"  # new -> capturing -> ready | failed; closed
        self._recorder: _Capture | None = None
        self._native = None  # what the device made of the steps (Device._graph): calling it replays them
        self._dirty = True
        self._bufs = self._gos = ()  # the buffers the steps use, each step's plain enqueue (_refresh)
        self._owned: list[Buffer] = []  # scratch buffers of the captured ops: the graph keeps them

    # ---- capture -----------------------------------------------------------------------------
    def __enter__(self) -> "Graph":
        dev = self.device
        if self._state != "new":
            raise InvalidArgumentError(f"this graph was already captured ({self._state}); "
                                       f"start a new one with dev.capture()")
        self._recorder = _Capture(self)
        dev._install(self._recorder, f"{dev.id} is already capturing a graph; captures do not nest")
        self._state = "capturing"
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.device._uninstall(self._recorder)
        self._owned += self._recorder.kept  # the captured ops' temporaries: used at every replay
        self._recorder = None  # (it refers back to this graph)
        if exc_type is not None:
            self._state = "failed"
            for plan in self.plans:
                plan.close()
            self.steps = []
            return
        self._adopt_temporaries()
        self._refresh()
        try:
            self._instantiate()
        except Exception:
            self._state = "failed"
            raise
        self._state = "ready"

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
        if self._dirty:
            self._instantiate()
        self._native()

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

    def bind_all(self, name: str, value) -> "Graph":
        """Update the argument named ``name`` in every captured launch whose kernel has a parameter
        of that name: the per-step scalars an op documents by name (``sample``'s ``seed``,
        ``offset``, ``temperature``), without counting its launches. A buffer must have the shape
        of each one captured. Raises InvalidArgumentError when no launch has such a parameter (the
        message lists the names there are). Returns self."""
        if self._state != "ready":
            self._not_ready()
        if not isinstance(name, str):
            raise InvalidArgumentError(f"graph.bind_all: the parameter name must be a str, got {type(name).__name__}")
        plans = self.plans
        steps = [i for i, plan in enumerate(plans) if any(p.name == name for p in plan.kernel.params)]
        if not steps:
            names = sorted({p.name for plan in plans for p in plan.kernel.params})
            raise InvalidArgumentError(f"graph.bind_all: no launch of this graph has a parameter {name!r}; its "
                                       f"launches' parameters are {', '.join(names) or 'none'}")
        for i in steps:
            self.bind(i, name, value)
        return self

    def close(self) -> None:
        """Release the graph and the memory its launches hold. Idempotent."""
        for plan in self.plans:
            plan.close()
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
        self._bufs = tuple({id(b): b for plan in self.plans for b in plan._live}.values())
        # the plain enqueue of each plan (on CUDA a plan's own launch may replay a one-kernel graph,
        # which a stream capture must not record)
        self._gos = tuple(s._native.enqueue if isinstance(s, Plan) else s for s in self.steps)

    def _instantiate(self) -> None:
        """What the device makes of the steps (CUDA: one graph captured from them)."""
        dev = self.device
        try:
            self._native = dev._graph(self._gos)
        except Exception as exc:
            raise DeviceError(f"graph capture on {dev.id} failed: {exc}") from exc
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
    with Graph(device) as graph:
        result = fn()
    plans = graph.plans
    if len(graph.steps) == 1 and len(plans) == 1:
        graph.steps = []
        plans[0].result = result
        return plans[0]
    graph.result = result
    return graph
