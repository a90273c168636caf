"""Kernels: one entry point of a compiled Program (program.py) with its parsed signature
(signature.py), launched with checked arguments on a checked grid.

Three objects, three lifetimes: the source text and defines describe a kernel; a Program is
compiled once per (source, defines, device) and cached under a written recipe; a Kernel binds one
entry point of a Program with its parsed signature, so arguments are checked and converted to the
parameter types declared in the source.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .buffer import Buffer
from .errors import InvalidArgumentError, LaunchConfigError
from .launch import LaunchConfig, check_kernel
from .memo import BoundedMemo
from .plan import Plan
from .signature import Param, _quick_scalar, convert_scalar, parse_signature  # noqa: F401 - the kernel API

if TYPE_CHECKING:  # pragma: no cover
    from .program import Program


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
        self._configs = BoundedMemo(256)  # LaunchConfig -> its sizes, checked against the device and this kernel
        self._limits = None  # launch.KernelLimits, asked of the backend on the first check
        # Local memory the kernel takes at launch rather than in static arrays (CUDA: dynamic shared
        # memory, `extern __shared__`; may exceed the static 48 KiB up to Device.local_mem_optin).
        # Set by the library family that compiled the kernel; backends without it ignore it.
        self.dynamic_local_bytes = 0
        # what the backend keeps per kernel (device.KernelState: a lock, a launch memo, CUDA's
        # raised dynamic shared memory limit), made by the device's launcher
        self._backend = self.device.launcher.kernel_state(self)
        # per parameter, the class a packed scalar has (None: a buffer): Device.launch converts
        # any other value (a Python number) through the parameter's checks
        self._types = tuple(p.dtype.type if p.kind == "scalar" else None for p in params)

    def __repr__(self) -> str:
        return f"<isthmus.Kernel {self.name}({', '.join(p.ctype + ('*' if p.kind == 'buffer' else '') + ' ' + p.name for p in self.params)}) on {self.device.id}>"

    def __call__(self, *args, config: LaunchConfig | None = None):
        if config is None:
            raise LaunchConfigError(f"kernel {self.name!r} needs a launch config: "
                                    f"{self.name}(..., config=isthmus.LaunchConfig(global_size, local_size))")
        # packed as they are checked (each buffer's memory held from its check to the enqueue), except
        # for a recorder, which takes the Buffers themselves
        checked = self.pack(args, self.device._recording() is None)
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
            check_kernel(self.name, found[1], self._resource_limits(), dev.local_mem_static, dev.private_mem_limit,
                         dev.id)
            self._configs[config] = found  # valid for this kernel once, valid always
        return found

    def _resource_limits(self):
        """launch.KernelLimits of this compiled kernel (asked of the backend once)."""
        if self._limits is None:
            self._limits = self.device.compiler.kernel_limits(self)
        return self._limits

    def pack(self, args, pack: bool = True) -> list:
        """Check ``args`` against the signature and convert them for the backend (buffers stay
        Buffers unless ``pack``, see :meth:`_pack_arg`)."""
        if len(args) != len(self.params):
            raise InvalidArgumentError(f"kernel {self.name!r} takes {len(self.params)} arguments "
                                       f"({', '.join(p.name for p in self.params)}), got {len(args)}")
        return [self._pack_arg(i, param, value, "kernel", pack)
                for i, (param, value) in enumerate(zip(self.params, args))]

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
            return dev.launcher.buffer_arg(value) if pack else value
        last = param._last
        if last[0] is value:  # the object converted last time (numbers are immutable: the same value)
            return last[1]
        converted = _quick_scalar(value, param)
        if converted is None:
            converted = convert_scalar(value, param, f"{what} {self.name!r} argument {i} ({param.name})")
        object.__setattr__(param, "_last", (value, converted))
        return converted

    def prepare(self, *args, config: LaunchConfig | None = None) -> "Plan":
        """A prepared launch: ``args`` checked and packed once, ``plan.launch()`` only enqueues.

        >>> plan = k.prepare(x, 2.0, config=isthmus.LaunchConfig((1024,)))
        >>> plan.launch(); plan.bind("a", 3.0); plan.launch()
        """
        return Plan(self, args, config)

    def _convert(self, i: int, value):
        """Argument ``i`` as its parameter's scalar type (Device.launch, for a value that is not one yet)."""
        param = self.params[i]
        last = param._last
        if last[0] is value:
            return last[1]
        fast = param._fast  # (the common case, a Python number in range, as _quick_scalar without a call)
        if fast is not None:
            t = type(value)
            if (t is int or (t is float and fast[3])) and fast[1] <= value <= fast[2]:
                converted = fast[0](value)
                object.__setattr__(param, "_last", (value, converted))
                return converted
        if param.kind == "buffer":
            raise InvalidArgumentError(f"{self.name}: parameter {param.name!r} is a buffer, got "
                                       f"{type(value).__name__}")
        converted = convert_scalar(value, param, self.name)
        object.__setattr__(param, "_last", (value, converted))
        return converted
