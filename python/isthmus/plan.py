"""Plan: a prepared launch. Arguments are checked and packed for the backend once; ``launch()``
only enqueues (CUDA: one driver call with a parameter block packed at prepare time; OpenCL: one
enqueue of a private kernel object whose arguments were set at prepare time).

A Plan holds the memory of every buffer bound to it, so closing a Buffer never leaves the plan
with a dangling pointer; launching a plan whose buffer was closed raises ClosedBufferError.
(An unpinned plan, ``pin=False``, the memo behind Java's eager launches, holds the Buffers but not
their memory: closing a buffer frees it at once, and the plan's launch check refuses it; a launch
holds the memory from before that check until its enqueue, like every launch, see buffer.py.)
A Plan is not meant to be bound on one thread while another launches it: give each thread its own.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import TYPE_CHECKING

from .buffer import Buffer
from .errors import ClosedBufferError, InvalidArgumentError, LaunchConfigError
from .launch import LaunchConfig

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Kernel


class Plan:
    """A pre-bound launch of one kernel with one config. Made by :meth:`Kernel.prepare`.

    >>> plan = k.prepare(n, 2.0, x, y, config=isthmus.LaunchConfig((1024,), (256,)))
    >>> for _ in range(1000):
    ...     plan.launch()
    >>> plan.bind("a", 3.0)      # same checks as a launch; the plan stays packed
    >>> plan.bind(3, other_y)    # by index or by parameter name
    """

    __slots__ = ("kernel", "device", "config", "_values", "_mems", "_live", "_native", "_go", "_closed",
                 "_pin", "result", "__weakref__")

    def __init__(self, kernel: "Kernel", args, config: LaunchConfig | None, pin: bool = True):
        if config is None:
            raise LaunchConfigError(f"kernel {kernel.name!r}.prepare(...) needs a launch config: "
                                    f"prepare(..., config=isthmus.LaunchConfig(global_size, local_size))")
        packed = kernel.pack(args)
        gsize, lsize = kernel._check_config(config)
        values = [a if isinstance(a, Buffer) else p for a, p in zip(args, packed)]
        self._setup(kernel, config, gsize, lsize, packed, values, pin)

    @classmethod
    def _from_packed(cls, kernel: "Kernel", gsize, lsize, packed: list, values: list) -> "Plan":
        """A plan from arguments a launch already checked and packed (graph capture of eager launches)."""
        plan = cls.__new__(cls)
        plan._setup(kernel, LaunchConfig(tuple(gsize), None if lsize is None else tuple(lsize)), gsize, lsize,
                    packed, values)
        return plan

    def _setup(self, kernel, config, gsize, lsize, packed, values, pin: bool = True) -> None:
        self._pin = pin
        self.kernel = kernel
        self.device = kernel.device
        self.config = config
        self._values = list(values)  # a Buffer or the converted NumPy scalar, per parameter
        # Holding each buffer's backend memory keeps the allocation alive whatever the Buffer does.
        # Taken from the packed arguments, which held it since the checks (a buffer closed meanwhile
        # has no _mem any more, and the launch check refuses it).
        launcher = self.device.launcher
        self._mems = [launcher.memory_of(p) if isinstance(v, Buffer) and pin else None
                      for v, p in zip(self._values, packed)]
        self._native = launcher.prepare(kernel, gsize, lsize, packed)
        self._go = self._native.launch
        self._closed = False
        self.result = None  # a library op's output buffer (library kernels' prepare)
        self._refresh()

    def _refresh(self) -> None:
        self._live = tuple(v for v in self._values if isinstance(v, Buffer))

    # ---- use ---------------------------------------------------------------------------------
    def launch(self) -> None:
        """Enqueue the kernel with the bound arguments (asynchronous, like a kernel call)."""
        # an unpinned plan holds its buffers' memory from before the check to the enqueue (a pinned
        # one holds it always): a buffer closed after the check still has valid memory
        held = None if self._pin else [b._mem for b in self._live]
        for b in self._live:
            if b._dt is None:
                self._closed_error(b)
        rec = self.device._recorder
        if rec is not None and rec.thread == threading.get_ident():
            rec.plan(self)
            return
        self._go()
        del held

    def bind(self, key, value) -> "Plan":
        """Rebind one argument, by parameter name or index, with the checks of a launch. Returns self."""
        self._check_open()
        i = self._index(key)
        param = self.kernel.params[i]
        packed = self.kernel._pack_arg(i, param, value, "plan of kernel")
        self._native.set(i, packed)
        if param.kind == "buffer":
            self._values[i] = value
            self._mems[i] = self.device.launcher.memory_of(packed) if self._pin else None
            self._refresh()
        else:
            self._values[i] = packed
        return self

    def value(self, key):
        """The argument bound to a parameter (a Buffer or a NumPy scalar)."""
        return self._values[self._index(key)]

    def close(self) -> None:
        """Release the plan's hold on its buffers' memory. Idempotent."""
        if not self._closed:
            self._closed = True
            self._values = [None if isinstance(v, Buffer) else v for v in self._values]
            self._mems = []
            self._live = (_CLOSED_PLAN,)
            self._native = self._go = None

    def __enter__(self) -> "Plan":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"global {self.config.global_size}, local {self.config.local_size}"
        return f"<isthmus.Plan {self.kernel.name} {state} on {self.device.id}>"

    # ---- internals ---------------------------------------------------------------------------
    def _index(self, key) -> int:
        params = self.kernel.params
        if isinstance(key, str):
            names = [p.name for p in params]
            if key in names:
                return names.index(key)
            raise InvalidArgumentError(f"kernel {self.kernel.name!r} has no parameter {key!r}; "
                                       f"parameters: {', '.join(names)}")
        if isinstance(key, bool) or not isinstance(key, int) or not -len(params) <= key < len(params):
            raise InvalidArgumentError(f"kernel {self.kernel.name!r}: argument index {key!r} out of range "
                                       f"(it takes {len(params)} arguments)")
        return key % len(params)

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidArgumentError(f"this plan of kernel {self.kernel.name!r} was closed; prepare a new one")

    def _closed_error(self, buf) -> None:
        self._check_open()
        names = [p.name for p, v in zip(self.kernel.params, self._values) if v is buf]
        if not self._pin:
            raise ClosedBufferError(f"launch of {self.kernel.name!r}: argument {names[0]!r} is a closed buffer")
        raise ClosedBufferError(f"plan of kernel {self.kernel.name!r}: the buffer bound to {', '.join(names)} was "
                                f"closed; bind an open buffer with plan.bind({names[0]!r}, buf)")

    def _snapshot(self) -> "Plan":
        """An independent plan with the same bindings (what a graph keeps of a captured launch)."""
        self._check_open()
        return Plan._from_packed(self.kernel, self.config.global_size, self.config.local_size,
                                 [self.kernel._pack_arg(i, p, v, "plan of kernel")
                                  for i, (p, v) in enumerate(zip(self.kernel.params, self._values))],
                                 self._values)


# stands in the closed plan's buffer list so that launch() takes the error path
_CLOSED_PLAN = SimpleNamespace(_dt=None, _mem=None)
