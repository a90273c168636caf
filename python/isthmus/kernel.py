"""Kernels: a source is compiled into a Program (cached in memory and on disk), from which a
Kernel is taken and launched.

Three objects, three lifetimes: the source text and defines describe a kernel; a Program is
compiled once per (source, defines, device) and cached under a written recipe; a Kernel binds one
entry point of a Program with its parsed signature, so arguments are checked and converted to the
parameter types declared in the source.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import knobs, program_cache
from ._version import __version__
from .buffer import Buffer
from .dtypes import SCALAR_CTYPES
from .errors import CompileError, InvalidArgumentError, LaunchConfigError
from .launch import LaunchConfig, check_kernel

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device
    from .plan import Plan

CACHE_FORMAT = program_cache.FORMAT
stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0}
_stats_lock = threading.Lock()


def _bump(key: str) -> None:
    with _stats_lock:
        stats[key] += 1


# ---- signatures ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "buffer" or "scalar"
    ctype: str
    dtype: np.dtype | None  # None: a pointer to a type isthmus has no buffer dtype for (any buffer accepted)
    writes: bool  # False for `const` pointees

    def __post_init__(self):
        # What convert_scalar's fast path needs, looked up once: (scalar type, lowest, highest,
        # whether a Python float is taken) for Python numbers that need no further checks.
        fast = None
        if self.kind == "scalar":
            dt = self.dtype
            if dt.kind == "f" and dt.itemsize >= 4:
                fast = (dt.type, -3.4e38, 3.4e38, True)  # float32 and float64 cannot overflow in this range
            elif dt.kind in "iu":
                fast = (dt.type, *_INT_RANGE[dt], False)
        object.__setattr__(self, "_fast", fast)


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict__", "__global", "global", "__constant", "constant",
               "__private", "private", "__read_only", "__write_only", "read_only", "write_only"}


def _strip(source: str) -> str:
    return _COMMENTS.sub(" ", source)


def parse_signature(source: str, name: str, defines: dict) -> tuple[Param, ...]:
    """The parameters of ``__kernel void name(...)`` in ``source``, types resolved through
    ``defines`` and simple ``#define``/``typedef`` lines of the source."""
    text = _strip(source)
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
    const = "const" in words
    type_words = [_resolve(w, aliases) for w in words[:-1] if w not in _QUALIFIERS]
    ctype = " ".join(type_words).replace("unsigned ", "u") if type_words else ""
    ctype = {"uint": "uint", "uchar": "uchar", "ulong": "ulong", "ushort": "ushort"}.get(ctype, ctype)
    if pointer:
        np_type = SCALAR_CTYPES.get(ctype)
        return Param(pname, "buffer", ctype, np_type, not const)
    if ctype not in SCALAR_CTYPES:
        raise CompileError(f"kernel {kernel!r}: parameter {pname!r} has type {ctype!r}, which isthmus cannot pass "
                           f"(scalar types: {', '.join(sorted(SCALAR_CTYPES))}, or pointers)", kernel_name=kernel)
    return Param(pname, "scalar", ctype, SCALAR_CTYPES[ctype], False)


_INT_RANGE = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
              for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)}


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


def convert_scalar(value, param: Param, where: str):
    """``value`` as the NumPy scalar of ``param``'s declared type; out of range or wrong kind is an error."""
    quick = _quick_scalar(value, param)
    if quick is not None:
        return quick
    dt = param.dtype
    if isinstance(value, Buffer):
        raise InvalidArgumentError(f"{where}: parameter {param.name!r} is a scalar {param.ctype}, got a Buffer")
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{where}: parameter {param.name!r} ({param.ctype}) got a bool; pass an int")
    if dt.kind in "iu":
        if isinstance(value, (float, np.floating)):
            if not float(value).is_integer():
                raise InvalidArgumentError(f"{where}: parameter {param.name!r} is {param.ctype}, got {value!r}")
            value = int(value)
        if not isinstance(value, (int, np.integer)):
            raise InvalidArgumentError(f"{where}: parameter {param.name!r} is {param.ctype}, "
                                       f"got {type(value).__name__}")
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise InvalidArgumentError(f"{where}: {value} does not fit parameter {param.name!r} "
                                       f"({param.ctype}: {info.min}..{info.max})")
        return dt.type(value)
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{where}: parameter {param.name!r} is {param.ctype}, got {type(value).__name__}")
    with np.errstate(over="ignore"):
        converted = dt.type(value)
    if np.isinf(converted) and np.isfinite(value):
        raise InvalidArgumentError(f"{where}: {value} overflows parameter {param.name!r} ({param.ctype})")
    return converted


# ---- programs --------------------------------------------------------------------------------
# The documented grammar of a define's value: a C number (decimal, float with exponent and suffix,
# hex) or a plain identifier, or nothing. Anything else could add code to the program (comments
# stand in for spaces in C) or cut the option string (a NUL byte).
_DEFINE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINE_VALUE = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+[uUlL]*"  # hex
                           r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFuUlL]*)"  # decimal, float
                           r"|[A-Za-z_][A-Za-z0-9_]*|")  # identifier, or nothing
_DEFINE_INT = (-(1 << 63), (1 << 64) - 1)


def _options(defines: dict) -> list[str]:
    if not isinstance(defines, dict):
        raise InvalidArgumentError(f"defines must be a dict of name -> value, got {type(defines).__name__}")
    for key in defines:
        if not isinstance(key, str) or not _DEFINE_NAME.fullmatch(key):
            raise InvalidArgumentError(f"define name {key!r} is not a C identifier (letters, digits, '_')")
    return [f"-D{key}={_define_value(key, defines[key])}" for key in sorted(defines)]


def _define_value(key: str, value) -> str:
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, (int, np.integer)) and not _DEFINE_INT[0] <= int(value) <= _DEFINE_INT[1]:
        raise InvalidArgumentError(f"define {key}: {int(value).bit_length()}-bit integer does not fit 64 bits")
    if not isinstance(value, (int, float, str, np.integer, np.floating)):
        raise InvalidArgumentError(f"define {key}: value of type {type(value).__name__}; values must be numbers "
                                   "or plain identifiers")
    text = str(value)
    if not _DEFINE_VALUE.fullmatch(text):
        shown = repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"
        raise InvalidArgumentError(f"define {key}={shown}: values must be numbers (42, -1.5e3, 2.0f, 0x1F) or "
                                   "plain identifiers (float, MY_MACRO): no spaces, operators, comments or quotes")
    return text


def recipe(device: "Device", source: str, options: list[str]) -> dict:
    """The written cache recipe: everything a compiled binary depends on."""
    return {"format": CACHE_FORMAT, "isthmus": __version__, "device": device.identity(),
            "compiler": device._compiler_id(), "options": options,
            "source_sha256": hashlib.sha256(source.encode()).hexdigest()}


class Program:
    """A compiled program on one device. Use :meth:`Program.build` (cached), not the constructor."""

    def __init__(self, device: "Device", native, source: str, defines: dict, key: str, from_disk: bool = False):
        self.device = device
        self.native = native
        self.source = source
        self.defines = dict(defines)
        self.key = key
        self._from_disk = from_disk  # a binary from the disk cache may still lack a kernel: rebuilt then
        self._kernels: dict[str, Kernel] = {}

    @classmethod
    def build(cls, device: "Device", source: str, defines: dict, name_hint: str = "") -> "Program":
        if not isinstance(source, str) or not source.strip():
            raise InvalidArgumentError("kernel source must be a non-empty string")
        _check_encodable(source)
        options = _options(defines)
        full = device._prepare_source(source)
        key = hashlib.sha256(json.dumps(recipe(device, full, options), sort_keys=True).encode()).hexdigest()
        memo = device._kernels
        found = memo.get(("program", key))
        if found is not None:
            _bump("memory_hits")
            return found
        with device._lock:
            found = memo.get(("program", key))
            if found is None:
                native, from_disk = _load_or_compile(device, full, options, key, name_hint)
                found = cls(device, native, source, defines, key, from_disk)
                memo[("program", key)] = found
        return found

    def kernel(self, name: str) -> "Kernel":
        found = self._kernels.get(name)
        if found is None:
            params = parse_signature(self.source, name, self.defines)
            found = Kernel(self, name, params, self._function(name))
            self._kernels[name] = found
        return found

    def _function(self, name: str):
        try:
            return self.device._function(self.native, name)
        except CompileError:
            if not self._from_disk:
                raise
        # The source declares the kernel (parse_signature found it) but the cached binary lacks
        # it: the entry is not what its header claims. Drop it and compile from source once.
        with self.device._lock:
            if self._from_disk:
                program_cache.drop(self.key)
                full = self.device._prepare_source(self.source)
                self.native = _compile(self.device, full, _options(self.defines), self.key, name)
                self._from_disk = False
        return self.device._function(self.native, name)


def _check_encodable(source: str) -> None:
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (from a bad decode or a Java string)
        line = source.count("\n", 0, exc.start) + 1
        raise InvalidArgumentError(f"kernel source is not valid Unicode text: character {source[exc.start]!r} "
                                   f"(a lone surrogate) at line {line}; fix the text or how it was decoded") from None


def _load_or_compile(device: "Device", source: str, options: list[str], key: str, name: str):
    """The program's native handle and whether it came from the disk cache."""
    if knobs.disk_cache():
        binary = program_cache.read(key)
        if binary is not None:
            try:
                with program_cache.loading(key):  # should the driver kill the process here, the next drops the entry
                    native = device._load_binary(binary, options)
                _bump("disk_hits")
                return native, True
            except Exception:  # noqa: BLE001 - a verified entry the driver still refuses (driver update): rebuild
                program_cache.drop(key)
    return _compile(device, source, options, key, name), False


def _compile(device: "Device", source: str, options: list[str], key: str, name: str):
    native = device._build(source, options, name)
    _bump("compiles")
    if knobs.disk_cache():
        binary = device._binary(native)
        if binary:
            program_cache.write(key, binary)
    return native


# ---- kernels ---------------------------------------------------------------------------------
class Kernel:
    """One entry point of a compiled Program, launched as ``kernel(*args, config=LaunchConfig(...))``.

    Buffers must live on the kernel's device and have the pointee type declared in the source;
    Python numbers are converted to the declared scalar types (an out-of-range value is an error).
    """

    def __init__(self, program: Program, name: str, params: tuple[Param, ...], native):
        self.program = program
        self.device = program.device
        self.name = name
        self.params = params
        self.native = native
        self._lock = threading.Lock()  # OpenCL kernel objects hold their arguments: set+enqueue is one step
        self._configs: dict = {}  # LaunchConfig -> its sizes, checked against the device and this kernel
        self._limits = None  # launch.KernelLimits, asked of the backend on the first check
        # per parameter, the class a packed scalar has (None: a buffer): Device.launch converts
        # any other value (a Python number) through the parameter's checks
        self._types = tuple(p.dtype.type if p.kind == "scalar" else None for p in params)

    def __repr__(self) -> str:
        return f"<isthmus.Kernel {self.name}({', '.join(p.ctype + ('*' if p.kind == 'buffer' else '') + ' ' + p.name for p in self.params)}) on {self.device.id}>"

    def __call__(self, *args, config: LaunchConfig | None = None):
        if config is None:
            raise LaunchConfigError(f"kernel {self.name!r} needs a launch config: "
                                    f"{self.name}(..., config=isthmus.LaunchConfig(global_size, local_size))")
        if len(args) != len(self.params):
            self._arity_error(args)
        # packed as they are checked (each buffer's memory held from its check to the enqueue), except
        # for a recorder, which takes the Buffers themselves
        rec = self.device._recorder
        pack = rec is None or rec.thread != threading.get_ident()
        checked = [self._pack_arg(i, param, value, "kernel", pack) for i, (param, value) in enumerate(zip(self.params, args))]
        gsize, lsize = self._check_config(config)
        self.device.launch(self, gsize, lsize, checked)

    def _check_config(self, config) -> tuple:
        """The sizes of ``config`` once the device's grid limits and this compiled kernel's needs
        (work-group size, local and private memory) allow it, checked once per config: a launch the
        device cannot run raises LaunchConfigError here, before anything reaches the driver."""
        found = self._configs.get(config) if config.__class__ is LaunchConfig else None
        if found is None:
            found = self.device._check_config(config)  # raises for anything but a LaunchConfig
            dev = self.device
            check_kernel(self.name, found[1], self._resource_limits(), dev.local_mem_size, dev.private_mem_limit,
                         dev.id)
            if len(self._configs) < 256:
                self._configs[config] = found  # valid for this kernel once, valid always
        return found

    def _resource_limits(self):
        """launch.KernelLimits of this compiled kernel (asked of the backend once)."""
        if self._limits is None:
            self._limits = self.device._kernel_limits(self)
        return self._limits

    def pack(self, args) -> list:
        """Check ``args`` against the signature and convert them for the backend."""
        if len(args) != len(self.params):
            self._arity_error(args)
        return [self._pack_arg(i, param, value) for i, (param, value) in enumerate(zip(self.params, args))]

    def _arity_error(self, args):
        raise InvalidArgumentError(f"kernel {self.name!r} takes {len(self.params)} arguments "
                                   f"({', '.join(p.name for p in self.params)}), got {len(args)}")

    def _pack_arg(self, i: int, param: Param, value, what: str = "kernel", pack: bool = True):
        """One argument checked and converted (shared by :meth:`pack` and ``Plan.bind``); a buffer
        is packed (its memory held) unless ``pack`` is False (Device.launch packs it then)."""
        dev = self.device
        if param.kind == "buffer":
            # the common case checked cheaply: an open buffer of this device and the declared dtype
            if (value.__class__ is Buffer and value._dt is not None and value.device is dev
                    and (param.dtype is None or value.dtype == param.dtype)):
                return (value._arg or value._launch_arg()) if pack else value
            where = f"{what} {self.name!r} argument {i} ({param.name})"
            if not isinstance(value, Buffer):
                raise InvalidArgumentError(f"{where}: expected a Buffer of {param.ctype}, got {type(value).__name__}")
            value._check()
            if value.device is not dev:
                raise InvalidArgumentError(f"{where}: buffer lives on {value.device.id}, the kernel on {dev.id}; "
                                           f"copy it with buf.to({dev.id!r})")
            if param.dtype is not None and value.dtype != param.dtype:
                raise InvalidArgumentError(f"{where}: expected a buffer of {param.dtype} ({param.ctype}), "
                                           f"got {value.dtype}")
            return dev._buffer_arg(value) if pack else value
        quick = _quick_scalar(value, param)
        if quick is not None:
            return quick
        return convert_scalar(value, param, f"{what} {self.name!r} argument {i} ({param.name})")

    def prepare(self, *args, config: LaunchConfig | None = None) -> "Plan":
        """A prepared launch: ``args`` checked and packed once, ``plan.launch()`` only enqueues.

        >>> plan = k.prepare(x, 2.0, config=isthmus.LaunchConfig((1024,)))
        >>> plan.launch(); plan.bind("a", 3.0); plan.launch()
        """
        from .plan import Plan

        return Plan(self, args, config)

    def _convert(self, i: int, value):
        """Argument ``i`` as its parameter's scalar type (Device.launch, for a value that is not one yet)."""
        param = self.params[i]
        fast = param._fast  # (the common case, a Python number in range, as _quick_scalar without a call)
        if fast is not None:
            t = type(value)
            if (t is int or (t is float and fast[3])) and fast[1] <= value <= fast[2]:
                return fast[0](value)
        if param.kind == "buffer":
            raise InvalidArgumentError(f"{self.name}: parameter {param.name!r} is a buffer, got "
                                       f"{type(value).__name__}")
        return convert_scalar(value, param, self.name)
