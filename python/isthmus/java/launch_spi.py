"""The Java SPI of prepared launches, graphs and fused kernels (``io.isthmus.spi.PlanHandle``,
``GraphHandle``, ``FusedHandle``): JPype proxies over :mod:`isthmus.plan`, :mod:`isthmus.graph`
and :mod:`isthmus.fuse`, with the error mapping of :mod:`isthmus.java.provider`."""
from __future__ import annotations

import jpype

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError, LaunchConfigError
from isthmus.graph import Graph
from isthmus.launch import LaunchConfig
from isthmus.plan import Plan

from .provider import BufferHandle, _argument, _result, _spi


def prepare(kernel_handle, jglobal, jlocal, jargs) -> "PlanHandle":
    """KernelHandle.prepare: a compiled kernel on a grid, or a library op (grid from the tuner)."""
    args = [_argument(a) for a in jargs]
    kernel = kernel_handle.kernel
    if kernel_handle.library:
        if jglobal is not None:
            raise LaunchConfigError(f"library kernel {kernel.name!r} sizes its own grid: "
                                       "call prepare(args...) without a LaunchConfig")
        prepared = kernel.prepare(*args)
    else:
        if jglobal is None:
            raise LaunchConfigError(f"kernel {kernel.name!r} needs a grid: prepare(LaunchConfig.of(n), args...)")
        config = LaunchConfig(tuple(jglobal), None if jlocal is None else tuple(jlocal))
        prepared = kernel.prepare(*args, config=config)
    return PlanHandle(prepared, args)


def capture(device, body) -> "GraphHandle":
    """DeviceHandle.capture: run the Java body inside ``with device.capture()``."""
    with device.capture() as graph:
        body.run()
    return GraphHandle(graph)


def fuse(device, expression) -> "FusedHandle":
    return FusedHandle(device.fuse(str(expression)))


@jpype.JImplements("io.isthmus.spi.PlanHandle", deferred=True)
class PlanHandle:
    """A Plan (or, for a library op of several launches, a Graph) launched from Java."""

    def __init__(self, prepared, args=()):
        self.prepared = prepared
        self._launch = prepared.launch
        result = getattr(prepared, "result", None)
        # An op writing into an input names that argument (Java returns the caller's own buffer);
        # a buffer the op allocated gets a handle that Java closes.
        self._argument = next((i for i, a in enumerate(args) if a is result), -1) if isinstance(result, Buffer) else -1
        self._result = BufferHandle(result, owned=True) if isinstance(result, Buffer) and self._argument < 0 else None

    @_spi
    def launch(self):
        self._launch()

    @_spi
    def bindName(self, name, value):
        self._plan().bind(str(name), _argument(value))

    @_spi
    def bindIndex(self, index, value):
        self._plan().bind(int(index), _argument(value))

    @_spi
    def result(self):
        return self._result

    @_spi
    def resultArgument(self):
        return self._argument

    @_spi
    def close(self):
        self.prepared.close()

    def _plan(self) -> Plan:
        if not isinstance(self.prepared, Plan):
            raise InvalidArgumentError("this library op is several launches (a graph): its arguments cannot be "
                                       "rebound; prepare it again with the new arguments")
        return self.prepared


@jpype.JImplements("io.isthmus.spi.GraphHandle", deferred=True)
class GraphHandle:
    """A captured Graph replayed from Java."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._launch = graph.launch

    @_spi
    def launch(self):
        self._launch()

    @_spi
    def bind(self, step, name, value):
        self.graph.bind(int(step), str(name), _argument(value))

    @_spi
    def size(self):
        return len(self.graph)

    @_spi
    def close(self):
        self.graph.close()


@jpype.JImplements("io.isthmus.spi.FusedHandle", deferred=True)
class FusedHandle:
    """A fused expression called from Java."""

    def __init__(self, fused):
        self.fused = fused

    @_spi
    def expression(self):
        return self.fused.expression

    @_spi
    def inputs(self):
        return jpype.JArray(jpype.JString)(list(self.fused.inputs))

    @_spi
    def output(self):
        return self.fused.output

    @_spi
    def call(self, jargs, jout):
        args = [_argument(a) for a in jargs]
        out = None if jout is None else _argument(jout)
        result = self.fused(*args, out=out)
        if jout is not None:
            return jout
        return _result(result, args, list(jargs))

    @_spi
    def prepare(self, jargs, jout):
        args = [_argument(a) for a in jargs]
        out = None if jout is None else _argument(jout)
        plan = self.fused.prepare(*args, out=out)
        return PlanHandle(plan, args + ([out] if out is not None else []))
