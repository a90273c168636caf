"""Prepared launches, graphs and fused expressions from Java (``io.isthmus.spi.PlanHandle``,
``GraphHandle``, ``FusedHandle``): proxies over :mod:`isthmus.plan`, :mod:`isthmus.graph` and
:mod:`isthmus.fuse`."""
from __future__ import annotations

import jpype

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError
from isthmus.graph import Graph
from isthmus.plan import Plan

from .buffers import BufferHandle, argument, arguments
from .calls import call
from .proxy import implements, reads


@implements("io.isthmus.spi.PlanHandle")
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

    def launch(self):
        self._launch()

    def bindName(self, name, value):
        self._plan().bind(str(name), argument(value))

    def bindIndex(self, index, value):
        self._plan().bind(int(index), argument(value))

    result = reads("_result")
    resultArgument = reads("_argument")

    def close(self):
        self.prepared.close()

    def _plan(self) -> Plan:
        if not isinstance(self.prepared, Plan):
            raise InvalidArgumentError("this library op is several launches (a graph): its arguments cannot be "
                                       "rebound; prepare it again with the new arguments")
        return self.prepared


@implements("io.isthmus.spi.GraphHandle")
class GraphHandle:
    """A captured Graph replayed from Java."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._launch = graph.launch

    def launch(self):
        self._launch()

    def bind(self, step, name, value):
        self.graph.bind(int(step), str(name), argument(value))

    def bindAll(self, name, value):
        self.graph.bind_all(str(name), argument(value))

    size = reads("graph", len)

    def close(self):
        self.graph.close()


@implements("io.isthmus.spi.FusedHandle")
class FusedHandle:
    """A fused expression called from Java."""

    def __init__(self, fused):
        self.fused = fused

    expression = reads("fused.expression")
    inputs = reads("fused.inputs", lambda names: jpype.JArray(jpype.JString)(list(names)))
    output = reads("fused.output")

    def call(self, jargs, jout):
        # (the caller's own handle when the result is ``out`` or one of the arguments)
        return call(self.fused, jargs, jout, None).handle()

    def prepare(self, jargs, jout):
        args = arguments(jargs)
        out = None if jout is None else argument(jout)
        plan = self.fused.prepare(*args, out=out)
        return PlanHandle(plan, args + ([out] if out is not None else []))
