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

import functools

import jpype

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError
from isthmus.ops import registry

from .buffers import BufferHandle, argument, arguments, buffer
from .proxy import implements

# Java shapes and dtype names made once and shared by every OpResult (Java copies the shape):
# converting a tuple to a long[] and a dtype to a java.lang.String costs more than the rest of
# the crossing (measured: benchmarks/results/runs/2026-12-03-java-host-time-pocl/).
_SHAPES_MAX = 1024  # a workload of ever new shapes: the least recently used go


def op_function(name: str):
    """The function of the op registered as ``name`` (the registry is the op table: a library op
    or a user's)."""
    return registry.op(name).run


def options(joptions) -> dict:
    """An op's keyword arguments from a Java ``Map<String, Object>``."""
    return {str(e.getKey()): _option(e.getValue()) for e in joptions.entrySet()}


def _option(v):
    if v is None:
        return None
    if isinstance(v, jpype.JClass("java.lang.Boolean")):
        return bool(v)
    if isinstance(v, jpype.JClass("java.lang.String")):
        return str(v)
    return argument(v)


def call(fn, jargs, jout, joptions):
    """Run ``fn`` with the Java arguments; the result as an OpResult."""
    # Indexing a Java Object[] is cheaper than iterating it through JPype; each element is read once.
    jobjs = [jargs[i] for i in range(len(jargs))]
    args = [argument(j) for j in jobjs]
    kwargs = {} if joptions is None else options(joptions)
    out = None
    if jout is not None:
        out = kwargs["out"] = argument(jout)
    return op_result(fn(*args, **kwargs), args, jobjs, out, jout)


def arg(j):
    """``argument`` with the two kinds every op call has tested first (a call level costs here)."""
    if type(j) is BufferHandle:
        return j._live()
    if isinstance(j, float):  # java.lang.Double/Float
        return float(j)
    return argument(j)


def run(fn, args: tuple, jobjs: tuple, jout):
    """Run ``fn`` on ``args``, converted from the Java arguments ``jobjs`` that crossed as
    parameters (``OpHandle.call4``); ``jout``: the ``out=`` handle, or None."""
    if jout is None:
        result = fn(*args)
    else:
        out = buffer(jout, "out")
        result = fn(*args, out=out)
        if result is out:
            return _own(jout)
    if isinstance(result, tuple):
        return op_result(result, args, jobjs, None, None)
    if args and result is args[-1] and type(jobjs[-1]) is BufferHandle:  # an op updating its last argument (axpy)
        return _own(jobjs[-1])
    return op_result(result, args, jobjs, None, None)


def op_result(result, args, jobjs, out, jout):
    """The OpResult for an op's return value: the caller's own handle when it returned ``out`` or
    an argument (Java hands back the caller's DeviceBuffer), else a new handle with shape and dtype."""
    if result is None:
        return None
    if isinstance(result, tuple) and result and all(isinstance(r, Buffer) for r in result):
        # an op returning several buffers (kv_append's caches, merge_attention_states' o and lse):
        # Java gets the first; its typed Ops methods pass the others in (lse_out=, state=)
        result = result[0]
    if not isinstance(result, Buffer):
        raise InvalidArgumentError(f"the op returned a {type(result).__name__}; the Java API carries one buffer")
    if result is out:
        return _own(jout)
    for a, j in zip(args, jobjs):
        if a is result and isinstance(j, BufferHandle):
            return _own(j)
    return _op_result_class()(BufferHandle(result, owned=True), _java_shape(result.shape), _java_dtype(result.dtype))


@functools.cache
def _op_result_class():
    return jpype.JClass("io.isthmus.spi.OpResult")  # (looked up once the JVM runs)


def _own(handle: BufferHandle):
    """The OpResult naming a handle the caller passed in: made once per handle (an op that updates
    its input in place, axpy or out=, is called in loops)."""
    result = handle.as_result
    if result is None:
        result = handle.as_result = _op_result_class()(handle, None, None)
    return result


@functools.lru_cache(maxsize=_SHAPES_MAX)
def _java_shape(shape: tuple):
    return jpype.JArray(jpype.JLong)(shape)


@functools.cache
def _java_dtype(dtype):
    return jpype.JString(str(dtype))


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
        from .launches import PlanHandle

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
