"""The crossing of a call from Java (an op's, a fused expression's): the Java arguments converted,
the function run, and its result as an ``io.isthmus.spi.OpResult`` (see :mod:`.ops` for why the
arguments cross as parameters)."""
from __future__ import annotations

import functools

import jpype

from isthmus.buffer import Buffer
from isthmus.errors import InvalidArgumentError

from .buffers import BufferHandle, argument, buffer

# Java shapes and dtype names made once and shared by every OpResult (Java copies the shape):
# converting a tuple to a long[] and a dtype to a java.lang.String costs more than the rest of
# the crossing (measured: benchmarks/results/runs/2026-12-03-java-host-time-pocl/).
_SHAPES_MAX = 1024  # a workload of ever new shapes: the least recently used go


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
    if isinstance(v, jpype.JArray):  # several outputs (top_k's out=(values, indices)): a tuple
        return tuple(argument(v[i]) for i in range(len(v)))
    if isinstance(v, jpype.JClass("java.util.Map")):  # a nested option (rope's rope_scaling)
        return {str(e.getKey()): _option(e.getValue()) for e in v.entrySet()}
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
    result = fn(*args, **kwargs)
    if isinstance(result, tuple) and out is None:  # several outputs, Java passed them all (top_k's out=(values, indices))
        given = [b for v in kwargs.values() for b in (v if isinstance(v, tuple) else (v,))]
        if all(r is None or any(r is g for g in given) for r in result):
            return None
    return op_result(result, args, jobjs, out, jout)


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
    if isinstance(result, tuple) and result and isinstance(result[0], Buffer):
        # an op returning several buffers (cross_entropy's gradients, None for an absent one; kv_append's caches,
        # merge_attention_states' o and lse): Java gets the first; its typed Ops methods pass the
        # buffers for the others in (gradOut, lse_out=, state=)
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
