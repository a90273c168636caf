"""Library ops from Java in one crossing: ``Runtime.op(name, args, out, options)`` calls the public
``isthmus.ops`` function of that name and returns an ``io.isthmus.spi.OpResult`` that carries the
result's handle, shape and dtype together (Java asks for nothing more). ``OpHandle`` is the same
for an op bound to one device (``Device.library``)."""
from __future__ import annotations

import jpype

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError

from .buffers import BufferHandle, argument, arguments
from .proxy import implements, spi

# The one table from op names to the functions Java runs: filled from the public functions of
# isthmus.ops on first use, so a new op needs no entry here (the typed io.isthmus.Ops method is
# its only Java-side line).
_OPS: dict[str, object] = {}
_OP_RESULT = None  # the io.isthmus.spi.OpResult class, looked up once the JVM runs

# Java shapes and dtype names made once and shared by every OpResult (Java copies the shape):
# converting a tuple to a long[] and a dtype to a java.lang.String costs more than the rest of
# the crossing (measured: benchmarks/results/issue12-java-crossings-pocl.md).
_SHAPES: dict[tuple, object] = {}
_SHAPES_MAX = 1024
_DTYPES: dict[object, object] = {}


def op_function(name: str):
    """The public ``isthmus.ops`` function called ``name``."""
    fn = _OPS.get(name)
    if fn is None:
        import isthmus.ops

        # public callables that are neither classes (Buffer) nor modules: the op functions
        public = {n: f for n, f in vars(isthmus.ops).items()
                  if not n.startswith("_") and callable(f) and not isinstance(f, type)}
        if name not in public:
            raise InvalidArgumentError(f"no library op {name!r}; isthmus.ops has {', '.join(sorted(public))}")
        fn = _OPS[name] = public[name]
    return fn


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
    if jout is None and joptions is None:
        return op_result(fn(*args), args, jobjs, None, None)
    kwargs = {} if joptions is None else options(joptions)
    out = None
    if jout is not None:
        out = kwargs["out"] = argument(jout)
    return op_result(fn(*args, **kwargs), args, jobjs, out, jout)


def op_result(result, args, jobjs, out, jout):
    """The OpResult for an op's return value: the caller's own handle when it returned ``out`` or
    an argument (Java hands back the caller's DeviceBuffer), else a new handle with shape and dtype."""
    global _OP_RESULT
    if result is None:
        return None
    if not isinstance(result, Buffer):
        raise InvalidArgumentError(f"the op returned a {type(result).__name__}; the Java API carries one buffer")
    if _OP_RESULT is None:
        _OP_RESULT = jpype.JClass("io.isthmus.spi.OpResult")
    if result is out:
        return _own(jout)
    for a, j in zip(args, jobjs):
        if a is result and isinstance(j, BufferHandle):
            return _own(j)
    return _OP_RESULT(BufferHandle(result, owned=True), _java_shape(result.shape), _java_dtype(result.dtype))


def _own(handle: BufferHandle):
    """The OpResult naming a handle the caller passed in: made once per handle (an op that updates
    its input in place, axpy or out=, is called in loops)."""
    result = handle.as_result
    if result is None:
        result = handle.as_result = _OP_RESULT(handle, None, None)
    return result


def _java_shape(shape: tuple):
    jshape = _SHAPES.get(shape)
    if jshape is None:
        if len(_SHAPES) >= _SHAPES_MAX:  # a workload of ever new shapes: start over rather than grow
            _SHAPES.clear()
        jshape = _SHAPES[shape] = jpype.JArray(jpype.JLong)(shape)
    return jshape


def _java_dtype(dtype):
    name = _DTYPES.get(dtype)
    if name is None:
        name = _DTYPES[dtype] = jpype.JString(str(dtype))
    return name


@implements("io.isthmus.spi.OpHandle")
class OpHandle:
    """A library op bound to a device (Python's ``device.kernel(name)``), called from Java."""

    def __init__(self, kernel):
        self.kernel = kernel

    @spi
    def name(self):
        return self.kernel.name

    @spi
    def call(self, jargs, jout, joptions):
        return call(self.kernel, jargs, jout, joptions)

    @spi
    def prepare(self, jargs, jout, joptions):
        from .launches import PlanHandle

        args = arguments(jargs)
        kwargs = {} if joptions is None else options(joptions)
        if jout is not None:
            kwargs["out"] = argument(jout)
        return PlanHandle(self.kernel.prepare(*args, **kwargs), args + ([kwargs["out"]] if jout is not None else []))
