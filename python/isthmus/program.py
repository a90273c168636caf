"""Programs: a kernel source compiled for one device with its defines, cached in memory (per
device) and on disk under a written recipe (format version, runtime version, device and compiler
identity, options, source hash); :meth:`Program.kernel` takes a :class:`~isthmus.kernel.Kernel` from it.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import warnings
from typing import TYPE_CHECKING

import numpy as np

from . import knobs, program_cache
from ._version import __version__
from .errors import CompileError, InvalidArgumentError
from .kernel import Kernel
from .signature import parse_signature

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device

stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0}
_stats_lock = threading.Lock()


def _bump(key: str) -> None:
    with _stats_lock:
        stats[key] += 1


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
    return {"format": program_cache.FORMAT, "isthmus": __version__, "device": device.identity(),
            "compiler": device.compiler.compiler_id(), "options": options,
            "source_sha256": hashlib.sha256(source.encode()).hexdigest()}


# what a compiler says of every kernel, whatever its source: NVIDIA's OpenCL (CUDA 13) notes on each __kernel
# that it overrides a noinline attribute no source gave
_BOILERPLATE = re.compile(r"^\(\): Warning: Function \w+ is a kernel, so overriding noinline attribute\. "
                          r"The function may be inlined when called\.$")


def compiler_messages(log: str) -> str:
    """The lines of a build log that say something of this source (the log less the compiler's boilerplate)."""
    return "\n".join(line for line in log.strip().splitlines() if not _BOILERPLATE.match(line.strip())).strip()


class CompileWarning(UserWarning):
    """A user's kernel compiled, and the compiler had something to say (``Program.build_log``)."""


class Program:
    """A compiled program on one device. Use :meth:`Program.build` (cached), not the constructor.
    ``build_log``: what the compiler said when it built this program here ("" when it said nothing
    or the program came from the disk cache)."""

    def __init__(self, device: "Device", native, source: str, defines: dict, key: str, from_disk: bool = False,
                 options: tuple = (), build_log: str = ""):
        self.device = device
        self.native = native
        self.source = source
        self.defines = dict(defines)
        self.key = key
        self.options = list(options)
        self.build_log = build_log
        self._from_disk = from_disk  # a binary from the disk cache may still lack a kernel: rebuilt then
        self._kernels: dict[str, Kernel] = {}

    @classmethod
    def build(cls, device: "Device", source: str, defines: dict, name_hint: str = "", user: bool = False) -> "Program":
        """The program of ``source`` with ``defines`` on ``device``, from memory, the disk cache or the
        compiler. ``user``: a user's kernel (Device.compile), whose compiler messages are a
        CompileWarning; the library's own kernels are compiled with warnings off (``-w``): nothing
        the library builds prints or warns."""
        if not isinstance(source, str) or not source.strip():
            raise InvalidArgumentError("kernel source must be a non-empty string")
        options = _options(defines) if user else [*_options(defines), "-w"]
        memo = device._kernels
        # The source and options seen before: the program, without the recipe (the backend's source
        # preparation, compiler identity, a hash of the full text).
        seen = ("source", source, *options)
        found = memo.get(seen)
        if found is not None:
            _bump("memory_hits")
            return found
        _check_encodable(source)
        full = device.compiler.prepare_source(source)
        key = hashlib.sha256(json.dumps(recipe(device, full, options), sort_keys=True).encode()).hexdigest()
        found = memo.get(("program", key))
        if found is not None:
            _bump("memory_hits")
            memo[seen] = found
            return found
        with device._lock:
            found = memo.get(("program", key))
            if found is None:
                native, from_disk, log = _load_or_compile(device, full, options, key, name_hint)
                found = cls(device, native, source, defines, key, from_disk, options, log)
                memo[("program", key)] = found
        memo[seen] = found
        said = compiler_messages(found.build_log) if user else ""
        if said and not found._warned:
            found._warned = True
            warnings.warn(f"kernel {name_hint!r} compiled on {device.id} with messages (Program.build_log):\n"
                          f"{said}", CompileWarning, stacklevel=3)
        return found

    _warned = False  # (the compiler's messages of a user's program are a warning once)

    def kernel(self, name: str) -> "Kernel":
        found = self._kernels.get(name)
        if found is None:
            found = Kernel(self, name, parse_signature(self.source, name, self.defines), self._function(name))
            self._kernels[name] = found
        return found

    def _function(self, name: str):
        compiler = self.device.compiler
        try:
            return compiler.function(self.native, name)
        except CompileError:
            if not self._from_disk:
                raise
        # The source declares the kernel (parse_signature found it) but the cached binary lacks
        # it: the entry is not what its header claims. Drop it and compile from source once.
        with self.device._lock:
            if self._from_disk:
                program_cache.drop(self.key)
                full = compiler.prepare_source(self.source)
                self.native, self.build_log = _compile(self.device, full, self.options, self.key, name)
                self._from_disk = False
        return compiler.function(self.native, name)


def _check_encodable(source: str) -> None:
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (from a bad decode or a Java string)
        line = source.count("\n", 0, exc.start) + 1
        raise InvalidArgumentError(f"kernel source is not valid Unicode text: character {source[exc.start]!r} "
                                   f"(a lone surrogate) at line {line}; fix the text or how it was decoded") from None


def _load_or_compile(device: "Device", source: str, options: list[str], key: str, name: str):
    """The program's native handle, whether it came from the disk cache, and the build log."""
    if knobs.disk_cache():
        binary = program_cache.read(key)
        if binary is not None:
            try:
                with program_cache.loading(key):  # should the driver kill the process here, the next drops the entry
                    native = device.compiler.load_binary(binary, options)
                _bump("disk_hits")
                return native, True, ""
            except Exception:  # noqa: BLE001 - a verified entry the driver still refuses (driver update): rebuild
                program_cache.drop(key)
    native, log = _compile(device, source, options, key, name)
    return native, False, log


def _compile(device: "Device", source: str, options: list[str], key: str, name: str) -> tuple:
    """(native, build log) of ``source`` compiled now (and written to the disk cache)."""
    native, log = device.compiler.build(source, options, name)
    _bump("compiles")
    if knobs.disk_cache():
        binary = device.compiler.binary(native)
        if binary:
            program_cache.write(key, binary)
    return native, log or ""
