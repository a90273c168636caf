"""Ops from Java in one crossing each. ``Runtime.library(name)`` resolves an op of the registry
(:func:`isthmus.ops.registry.op`: a library op, or one a user registered) into an ``OpHandle``
once; Java keeps it per name (``io.isthmus.Isthmus``), so a call carries no name. Each call
returns an ``io.isthmus.spi.OpResult`` that holds the result's handle, shape and dtype together
(Java asks for nothing more). ``Runtime.op(name, args, out, options)`` is the same call by name;
``DeviceHandle.op(name)`` gives an ``OpHandle`` bound to one device (``Device.library``).

Why ``OpHandle`` has ``call4(a, b, c, d, out)`` next to ``call(Object[], ...)``: JPype
converts a method's parameters together with the call, but every element read out of an
``Object[]`` costs it a wrapper object of its own, and the array one more (a boxed Double read from
an array: about 3 us on a busy 2-core machine). ``Ops.axpy`` through an array cost 30-60% more host
time than the typed crossing it replaced; as parameters it costs what that did
(benchmarks/results/runs/2026-12-03-java-host-time-pocl/issue12-java-host-pocl.md). Four slots and ``out`` cover every op call of the
typed ``Ops``; more arguments, or keyword options, take the array."""
from __future__ import annotations

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError
from isthmus.ops import registry

from .buffers import arguments, buffer
from .calls import arg, call, options, run
from .launches import PlanHandle
from .proxy import implements


@implements("io.isthmus.spi.OpHandle")
class OpHandle:
    """An op called from Java: ``kernel``, a library kernel bound to a device (``DeviceHandle.op``),
    or else ``name``, an op of the registry on the device its buffers live on
    (``Runtime.library``), looked up at each call (one dict lookup), so an op a user registers
    again runs its newer spec."""

    def __init__(self, kernel=None, name: str | None = None):
        self.kernel = kernel
        self.op = None if kernel is not None else registry.op(name).name  # an unknown name fails here

    def _function(self):
        if self.op is None:
            return self.kernel
        # a name gone from the registry since: op() raises the error that lists the ops
        return (registry.get(self.op) or registry.op(self.op)).run

    def name(self):
        return self.kernel.name if self.op is None else self.op

    def call(self, jargs, jout, joptions):
        return call(self._function(), jargs, jout, joptions)

    # The arguments converted one by one, not in a loop: this is the path of every Java op call.
    def call4(self, a, b, c, d, jout):
        # the arguments fill the slots from a; the first None ends them (Java never sends a null argument)
        fn = self._function()
        if b is None:
            return run(fn, (), (), jout) if a is None else run(fn, (arg(a),), (a,), jout)
        if c is None:
            return run(fn, (arg(a), arg(b)), (a, b), jout)
        if d is None:
            return run(fn, (arg(a), arg(b), arg(c)), (a, b, c), jout)
        return run(fn, (arg(a), arg(b), arg(c), arg(d)), (a, b, c, d), jout)

    def prepare(self, jargs, jout, joptions):
        args = arguments(jargs)
        kwargs = {} if joptions is None else options(joptions)
        if jout is not None:
            kwargs["out"] = buffer(jout, "out")
        return PlanHandle(self._kernel(args, kwargs).prepare(*args, **kwargs),
                          args + ([kwargs["out"]] if jout is not None else []))

    def _kernel(self, args, kwargs):
        """The kernel to prepare: a registered op is prepared on the device of its first buffer."""
        if self.op is None:
            return self.kernel
        dev = next((a.device for a in (*args, *kwargs.values()) if isinstance(a, Buffer)), None)
        if dev is None:
            raise InvalidArgumentError(f"{self.op}: no buffer among the arguments, so no device to prepare it on")
        return registry.BoundOp(dev, self.op)
