"""Fused elementwise kernels: ``isthmus.fuse("out = a * x + b * tanh(y)")`` compiles the whole
expression into one kernel (either backend), typed by NumPy's promotion rules.

Inputs are the expression's names in order of first use. At call time a Buffer is an elementwise
operand, a number is broadcast (a Python number is "weak" as in NumPy 2, a NumPy scalar keeps its
dtype). One kernel is compiled per (expression, input dtypes, output dtype, device) and cached.
When the target also appears on the right (``y = a * x + y``) the result goes into that input.

>>> f = isthmus.fuse("out = a * x + b * tanh(y)")
>>> out = f(2.0, x, 0.5, y)                  # positional in f.inputs order, or by name
>>> f(a=2.0, x=x, b=0.5, y=y, out=out)       # into an existing buffer
>>> np.allclose(out.to_numpy(), f.reference(a=2.0, x=xh, b=0.5, y=yh))
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import numpy as np

from ..buffer import Buffer
from ..errors import InvalidArgumentError, UnsupportedDtypeError
from .expr import HALF_ROUNDING, Emitter, Expression, ctype, evaluate, infer, parse
from .. import knobs
from ..kernel import convert_scalar
from ..launch import LaunchConfig
from ..memo import BoundedMemo
from ..program import Program

if TYPE_CHECKING:  # pragma: no cover
    from ..device import Device
    from ..plan import Plan

_cache = BoundedMemo(knobs.program_memo_entries)  # (expression, device id) -> Fused, LRU


def fuse(expression: str, device: "Device | None" = None) -> "Fused":
    """The fused kernel of ``expression`` (cached per expression and device); see the module docstring."""
    key = (expression, None if device is None else device.id)
    found = _cache.get(key)
    if found is None:
        found = _cache[key] = Fused(parse(expression), device)
    return found


class Fused:
    """A fused elementwise expression; call it with buffers and scalars."""

    def __init__(self, expr: Expression, device: "Device | None"):
        self.expression = expr.text
        self.inputs = expr.inputs
        self.output = expr.target
        self.device = device
        self._expr = expr
        self._inplace = expr.target in expr.inputs
        self._variants: dict = {}

    def __repr__(self) -> str:
        return f"<isthmus.Fused {self.expression!r}>"

    # ---- calls -------------------------------------------------------------------------------
    def __call__(self, *args, out: Buffer | None = None, **kwargs) -> Buffer:
        """Run the expression; returns the output buffer (``out``, the in-place input, or a new one)."""
        values = self._values(args, kwargs)
        variant, n, out = self._resolve(values, out)
        if n:
            kernel = variant.kernel
            kernel.device.launch(kernel, variant.gsize(n), variant.lsize, variant.pack(n, out, values))
        return out

    def prepare(self, *args, out: Buffer | None = None, **kwargs) -> "Plan":
        """A prepared launch (:class:`isthmus.plan.Plan`); ``plan.result`` is the output buffer and
        ``plan.bind(name, value)`` rebinds an input by its name in the expression."""
        values = self._values(args, kwargs)
        variant, n, out = self._resolve(values, out)
        if n == 0:
            raise InvalidArgumentError(f"{self.expression!r}: cannot prepare a launch over 0 elements")
        plan = variant.kernel.prepare(*variant.pack(n, out, values),
                                      config=LaunchConfig(variant.gsize(n), variant.lsize))
        plan.result = out
        return plan

    def reference(self, *args, **kwargs) -> np.ndarray:
        """The expression evaluated by NumPy over host arrays and scalars (what the kernel must match)."""
        return np.asarray(evaluate(self._expr, dict(zip(self.inputs, self._values(args, kwargs)))))

    # ---- internals ---------------------------------------------------------------------------
    def _values(self, args, kwargs) -> list:
        if len(args) > len(self.inputs):
            raise InvalidArgumentError(f"{self.expression!r} takes {len(self.inputs)} inputs "
                                       f"({', '.join(self.inputs)}), got {len(args)} positional arguments")
        named = dict(zip(self.inputs, args))
        for k, v in kwargs.items():
            if k not in self.inputs:
                hint = "; the output is passed as out=" if k == self.output else ""
                raise InvalidArgumentError(f"{self.expression!r} has no input {k!r}; inputs: "
                                           f"{', '.join(self.inputs)}{hint}")
            if k in named:
                raise InvalidArgumentError(f"{self.expression!r}: input {k!r} given twice")
            named[k] = v
        missing = [n for n in self.inputs if n not in named]
        if missing:
            raise self._expr.error(self._expr.first_use(missing[0]), f"no value for input {missing[0]!r}; call "
                                   f"with {', '.join(self.inputs)} (positional or by name)")
        return [named[n] for n in self.inputs]

    def _kinds(self, values) -> tuple:
        kinds = []
        for name, v in zip(self.inputs, values):
            if isinstance(v, Buffer):
                v._check()
                kinds.append((True, v.dtype))
            elif isinstance(v, np.ndarray):
                raise self._expr.error(self._expr.first_use(name), f"input {name!r} is a NumPy array; copy it to the "
                                                                     f"device first (dev.asarray)")
            elif type(v) in (int, float):
                kinds.append((False, type(v)))
            elif isinstance(v, (np.integer, np.floating)):
                kinds.append((False, v.dtype))
            else:
                raise self._expr.error(self._expr.first_use(name), f"input {name!r} must be a Buffer or a real "
                                                                     f"number, got {type(v).__name__}")
        return tuple(kinds)

    def _resolve(self, values, out):
        kinds = self._kinds(values)
        bufs = [(n, v) for n, v in zip(self.inputs, values) if isinstance(v, Buffer)]
        if self._inplace:
            if out is not None:
                raise InvalidArgumentError(f"{self.expression!r} writes its result into input {self.output!r}; "
                                           f"do not pass out=")
            out = values[self.inputs.index(self.output)]
            if not isinstance(out, Buffer):
                raise self._expr.error(self._expr.first_use(self.output),
                                       f"{self.output!r} is the output, so it must be a Buffer")
        if out is not None:
            if not isinstance(out, Buffer):
                raise InvalidArgumentError(f"out must be a Buffer, got {type(out).__name__}")
            out._check()
        ref = out if out is not None else (bufs[0][1] if bufs else None)
        if ref is None:
            raise InvalidArgumentError(f"{self.expression!r}: every input is a scalar; pass out= (a Buffer) to "
                                       f"say where and how many elements to write")
        dev = self.device or ref.device
        for name, b in bufs + ([(self.output, out)] if out is not None else []):
            if b.device is not dev:
                raise InvalidArgumentError(f"{self.expression!r}: {name!r} lives on {b.device.id}, expected {dev.id}")
            if b.shape != ref.shape:
                raise self._expr.error(self._expr.first_use(name),
                                       f"{name!r} has shape {b.shape}, expected {ref.shape} (fused expressions "
                                       f"broadcast scalars only)")
        key = (dev.id, kinds, None if out is None else out.dtype)
        variant = self._variants.get(key)
        if variant is None:
            variant = self._variants[key] = _Variant(self._expr, dev, kinds, key[2])
        if out is None:
            out = dev.empty(ref.shape, variant.out_dtype)
        return variant, ref.size, out


class _Variant:
    """The expression compiled for one device, input kinds and output dtype."""

    def __init__(self, expr: Expression, dev: "Device", kinds: tuple, out_dtype):
        self.expr = expr
        types = infer(expr, {n: k for n, (_, k) in zip(expr.inputs, kinds)})
        root = types[id(expr.tree)]
        if out_dtype is None:
            out_dtype = root if isinstance(root, np.dtype) else np.asarray(root(1)).dtype
        out_dtype = np.dtype(out_dtype)
        if isinstance(root, np.dtype) and not np.can_cast(root, out_dtype, casting="same_kind"):
            raise expr.error(expr.eq_column, f"the result is {root}, which cannot be stored into a {out_dtype} "
                                             f"output (NumPy's same_kind rule); pass an out= of {root}")
        self.out_dtype = out_dtype
        self._check_device(dev, types, out_dtype)
        self.source = _source(expr, types, kinds, out_dtype)
        # the library's own kernel: built with warnings off, as every op's (Program.build, not Device.compile)
        self.kernel = Program.build(dev, self.source, {}, "fused").kernel("fused")
        # (a kernel may allow smaller work-groups than its device; its local memory is checked too)
        self.lsize = (min(256, dev.max_work_group_size, self.kernel._resource_limits().max_work_group_size),)
        self.kernel._check_config(LaunchConfig(self.lsize, self.lsize))
        self._inplace = expr.target in expr.inputs
        self._inputs = [(p, f"fused expression {expr.text!r}: input {p.name!r}")
                        for p in self.kernel.params[1 if self._inplace else 2:]]  # (after n, and out unless in place)

    def pack(self, n: int, out: Buffer, values: list) -> list:
        """The kernel's arguments for Device.launch. Buffers were checked by Fused._resolve and their
        dtypes are this variant's key, so only scalars need converting (with the range checks of a
        launch, and messages that name the expression's input)."""
        packed = [np.int64(n)] if self._inplace else [np.int64(n), out]
        return packed + [v if param.kind == "buffer" else convert_scalar(v, param, where)
                         for (param, where), v in zip(self._inputs, values)]

    def gsize(self, n: int) -> tuple[int]:
        w = self.lsize[0]
        return (-(-n // w) * w,)

    def _check_device(self, dev, types, out_dtype) -> None:
        if dev.supports(np.float64):
            return
        for node in ast.walk(self.expr.tree):
            t = types.get(id(node))
            if isinstance(t, np.dtype) and t == np.float64:  # (np.dtype("float64") == None is True)
                raise UnsupportedDtypeError(self.expr.error(node, f"this computes in float64, which {dev.id} does not "
                                                                  f"support; use float32 inputs or NumPy float32 "
                                                                  f"scalars").args[0])
        if out_dtype == np.float64:
            raise UnsupportedDtypeError(f"{dev.id} does not support a float64 output")


def _source(expr: Expression, types: dict, kinds: tuple, out_dtype: np.dtype) -> str:
    """The kernel source; scalar inputs are passed as parameters of the type they are used at."""
    uses: dict[str, set] = {n: set() for n in expr.inputs}
    parents = {id(c): p for p in ast.walk(expr.tree) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(expr.tree):
        if isinstance(node, ast.Name) and id(node) in types:  # (not a called function's name)
            t = types[id(node)]
            if not isinstance(t, np.dtype):  # weak: it takes the type of the first strong ancestor
                p = parents.get(id(node))
                while p is not None and not isinstance(types[id(p)], np.dtype):
                    p = parents.get(id(p))
                t = types[id(p)] if p is not None else out_dtype
            uses[node.id].add(t)
    params = ["const long isthmus_n"]
    inplace = expr.target in expr.inputs
    if not inplace:
        params.append(f"__global {_storage(out_dtype)}* {expr.target}")
    load = {}
    for name, (is_buffer, kind) in zip(expr.inputs, kinds):
        if is_buffer:
            const = "" if inplace and name == expr.target else "const "
            params.append(f"__global {const}{_storage(kind)}* {name}")
            load[name] = f"vload_half(isthmus_i, {name})" if kind == np.float16 else f"{name}[isthmus_i]"
        else:
            used = np.result_type(*uses[name]) if uses[name] else np.dtype(np.float32)
            params.append(f"const {ctype(used)} {name}")
            load[name] = name
    code, rdt = Emitter(expr, types, load).emit(expr.tree, out_dtype)
    value = code if rdt == out_dtype else f"(({ctype(out_dtype)}){code})"
    store = (f"vstore_half({value}, isthmus_i, {expr.target});" if out_dtype == np.float16
             else f"{expr.target}[isthmus_i] = ({_storage(out_dtype)}){value};")
    return (
        "#if defined(__OPENCL_VERSION__) && defined(cl_khr_fp64)\n"
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
        + (HALF_ROUNDING if "ISTHMUS_ROUND_HALF" in code else "") +
        f"/* isthmus fused: {expr.text.replace('*/', '* /')} */\n"
        f"__kernel void fused({', '.join(params)})\n{{\n"
        "    const long isthmus_i = (long)get_global_id(0);\n"
        "    if (isthmus_i >= isthmus_n) return;\n"
        f"    {store}\n}}\n")


def _storage(dt: np.dtype) -> str:
    return "half" if dt == np.float16 else ctype(dt)
