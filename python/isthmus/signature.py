"""Kernel signatures: the parameters of ``__kernel void name(...)`` parsed from the source (types
resolved through the defines), and Python numbers converted to a parameter's declared scalar type
(an out-of-range value or a wrong kind is an error)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .buffer import Buffer
from .dtypes import SCALAR_CTYPES
from .errors import CompileError, InvalidArgumentError


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "buffer" or "scalar"
    ctype: str
    dtype: np.dtype | None  # None: a pointer to a type isthmus has no buffer dtype for (any buffer accepted)
    writes: bool  # False for `const` pointees

    def __post_init__(self):
        # What converting a value needs, worked out once per parameter (not per call): ``_fast``,
        # (scalar type, lowest, highest, whether a Python float is taken) for Python numbers that
        # need no check but that range test; ``_limits``, the checks of every other value: an
        # integer type's (lowest, highest), or the magnitude from which a float type rounds to
        # infinity (a finite value that large overflows it).
        fast = limits = None
        if self.kind == "scalar":
            dt = self.dtype
            if dt.kind == "f" and dt.itemsize >= 4:
                fast = (dt.type, -3.4e38, 3.4e38, True)  # float32 and float64 cannot overflow in this range
            elif dt.kind in "iu":
                fast = (dt.type, *_INT_RANGE[dt], False)
            limits = _INT_RANGE[dt] if dt.kind in "iu" else _OVERFLOW[dt]
        object.__setattr__(self, "_fast", fast)
        object.__setattr__(self, "_limits", limits)
        # (the value last converted, its conversion): the same object again (a constant in the
        # caller's loop) is the same conversion, and passing the same converted object lets the
        # OpenCL launcher skip setting the argument again (Kernel.convert)
        object.__setattr__(self, "_last", (_NOTHING, None))


_NOTHING = object()  # (what no argument is)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict__", "__global", "global", "__constant", "constant",
               "__private", "private", "__read_only", "__write_only", "read_only", "write_only"}


def parse_signature(source: str, name: str, defines: dict) -> tuple[Param, ...]:
    """The parameters of ``__kernel void name(...)`` in ``source``, types resolved through
    ``defines`` and simple ``#define``/``typedef`` lines of the source."""
    text = _COMMENTS.sub(" ", source)
    # Anything may stand between `__kernel` and `void` (attributes, macros such as a required work-group size).
    match = re.search(r"(?:\b__kernel|\bkernel)\b[^;{}]*?\bvoid\s+" + re.escape(name) + r"\s*\(([^)]*)\)", text, re.S)
    if match is None:
        raise CompileError(f"no kernel named {name!r} in the source (expected '__kernel void {name}(...)')",
                           kernel_name=name)
    aliases = {k: str(v) for k, v in defines.items()}
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)\s+([\w ]+?)\s*$", text, re.M):
        aliases.setdefault(m.group(1), m.group(2))
    for m in re.finditer(r"\btypedef\s+([\w ]+?)\s+(\w+)\s*;", text):
        aliases.setdefault(m.group(2), m.group(1))
    body = match.group(1).strip()
    if not body or body == "void":
        return ()
    return tuple(_param(p.strip(), aliases, name) for p in body.split(","))


def _resolve(token: str, aliases: dict) -> str:
    seen = 0
    while token in aliases and seen < 16:
        token, seen = aliases[token].strip(), seen + 1
    return token


def _param(text: str, aliases: dict, kernel: str) -> Param:
    pointer = "*" in text
    words = re.findall(r"[A-Za-z_]\w*", text)
    if not words:
        raise CompileError(f"cannot parse parameter {text!r} of kernel {kernel!r}", kernel_name=kernel)
    pname = words[-1]
    if any(w in ("__local", "local") for w in words):
        raise CompileError(f"kernel {kernel!r}: __local pointer parameter {pname!r} is not supported (it has no "
                           "CUDA equivalent); declare a fixed-size __local array inside the kernel instead",
                           kernel_name=kernel)
    type_words = [_resolve(w, aliases) for w in words[:-1] if w not in _QUALIFIERS]
    ctype = " ".join(type_words).replace("unsigned ", "u") if type_words else ""
    if pointer:
        return Param(pname, "buffer", ctype, SCALAR_CTYPES.get(ctype), "const" not in words)
    if ctype not in SCALAR_CTYPES:
        raise CompileError(f"kernel {kernel!r}: parameter {pname!r} has type {ctype!r}, which isthmus cannot pass "
                           f"(scalar types: {', '.join(sorted(SCALAR_CTYPES))}, or pointers)", kernel_name=kernel)
    return Param(pname, "scalar", ctype, SCALAR_CTYPES[ctype], False)


_INT_RANGE = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
              for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)}
# the least magnitude that rounds to infinity in each float type: its largest finite value and half
# a unit in its last place (round to nearest even)
_OVERFLOW = {np.dtype(t): float(np.finfo(t).max) + (float(np.finfo(t).max) - float(np.nextafter(np.finfo(t).max, t(0)))) / 2
             for t in (np.float16, np.float32)}
_INF = float("inf")
_OVERFLOW[np.dtype(np.float64)] = _INF


def _quick_scalar(value, param: Param):
    """``value`` as the NumPy scalar of ``param``'s type in the common cases that need no check but
    a range test (a Python float or int for a float32/64 in float32's range, a Python int for an
    int in range), else None."""
    fast = param._fast
    if fast is not None:
        t = type(value)
        if (t is int or (t is float and fast[3])) and fast[1] <= value <= fast[2]:
            return fast[0](value)
    return None


# the kind of number each class is ("i" integer, "f" float, "b" bool, "" not a number), looked up
# by the value's class; a class not listed yet (a subclass, such as what JPype hands over for a
# Java int or double) is classified once, by isinstance, and added
_KINDS: dict = {int: "i", float: "f", bool: "b", np.bool_: "b",
                **{t: "i" for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)},
                **{t: "f" for t in (np.float16, np.float32, np.float64)}}


def _kind(c) -> str:
    kind = "b" if issubclass(c, (bool, np.bool_)) else "i" if issubclass(c, (int, np.integer)) else (
        "f" if issubclass(c, (float, np.floating)) else "")
    if len(_KINDS) < 256:
        _KINDS[c] = kind
    return kind


def convert_scalar(value, param: Param, where: str):
    """``value`` as the NumPy scalar of ``param``'s declared type; out of range or wrong kind is an
    error. The checks read what the parameter worked out once (Param._limits) and the kind of
    number the value's class is (_KINDS): no NumPy limits or error-state objects per call."""
    quick = _quick_scalar(value, param)
    if quick is not None:
        return quick
    dt = param.dtype
    c = value.__class__
    if c is dt.type:  # already the declared type (a NumPy scalar, a plan's constant)
        return value
    kind = _KINDS.get(c)
    if kind is None:
        kind = _kind(c)
    if kind == "i" or kind == "f":
        if dt.kind in "iu":
            if kind == "f":
                if not float(value).is_integer():
                    raise InvalidArgumentError(f"{where}: parameter {param.name!r} is {param.ctype}, got {value!r}")
            v = int(value)
            lo, hi = param._limits
            if not lo <= v <= hi:
                raise InvalidArgumentError(f"{where}: {value} does not fit parameter {param.name!r} "
                                           f"({param.ctype}: {lo}..{hi})")
            return dt.type(v)
        try:
            magnitude = abs(float(value))  # (infinity and NaN pass: they are values of every float type)
            overflows = param._limits <= magnitude < _INF
        except OverflowError:  # an int past any float
            overflows = True
        if overflows:
            raise InvalidArgumentError(f"{where}: {value} overflows parameter {param.name!r} ({param.ctype})")
        return dt.type(value)
    if kind == "b":
        raise InvalidArgumentError(f"{where}: parameter {param.name!r} ({param.ctype}) got a bool; pass an int")
    if isinstance(value, Buffer):
        raise InvalidArgumentError(f"{where}: parameter {param.name!r} is a scalar {param.ctype}, got a Buffer")
    raise InvalidArgumentError(f"{where}: parameter {param.name!r} is {param.ctype}, got {type(value).__name__}")
