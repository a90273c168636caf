"""Devices: the base class every backend fills in, and discovery over all backends.

A backend (``backends/opencl/``, ``backends/cuda/``) is a Device that holds its parts, each a
small contract declared here: an :class:`Allocator` (device memory, copies, fills), a
:class:`Compiler` (source to program to function) and a :class:`Launcher` (packed arguments,
launches, prepared launches, per-kernel state). Public methods live here and call the parts; the
few hooks left on the device itself concern its queue or stream (synchronize, events, transfer
lane, graphs, interop). Nothing is probed at import: discovery runs on the first call to
:func:`devices` or :func:`device` and is remembered.
"""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import numpy as np

from . import knobs
from .buffer import Buffer, _shape
from .dtypes import DType, lookup
from .errors import (BackendUnavailableError, InvalidArgumentError, IsthmusError, OutOfMemoryError,
                     UnsupportedDtypeError)
from .graph import Graph
from .launch import GridLimits, LaunchConfig, check_config
from .program import Program
from .memo import BoundedMemo
from .record import _DIRECT, Recorder

if TYPE_CHECKING:  # pragma: no cover
    from .fuse import Fused
    from .ops.registry import BoundOp
    from .kernel import Kernel


class Device:
    """One compute device of one backend.

    >>> dev = isthmus.device()            # ISTHMUS_DEVICE, else the best available
    >>> x = dev.asarray(np.arange(8, dtype=np.float32))
    >>> dev.synchronize()
    """

    backend: str = ""
    _recorder = None  # the Recorder installed on this device (graph capture, bench), else None
    # the largest grid a launch may ask for (launch.check_grid); backends set their own
    grid_limits = GridLimits(index_bits=64, max_groups=(2**32 - 1,) * 3, max_total_groups=2**32 - 1,
                             runtime_picks_local=True)
    # the most private memory one work-item may use, where the backend reports what kernels use
    private_mem_limit: int | None = None
    # Whether kernels may use NVIDIA's inline PTX tensor-core instructions (mma.sync m16n8k16,
    # ldmatrix, cp.async: sm_80 and later); the backends that can tell set it.
    mma_sync: bool = False
    # Whether kernels may use Hopper's warpgroup MMA (wgmma.mma_async: sm_90a, CUDA only; NVIDIA's
    # OpenCL compiles for sm_90 without the "a" features).
    wgmma: bool = False
    # The most local memory one work-group may use where that exceeds local_mem_size, else None:
    # CUDA's opt-in dynamic shared memory (a kernel's Kernel.dynamic_local_bytes, given at launch),
    # NVIDIA OpenCL's static arrays (its compiler takes them up to the same per-block maximum
    # although the device reports 48 KiB; local_mem_dynamic tells the two apart).
    local_mem_optin: int | None = None
    # Whether local memory past local_mem_size is given at launch (CUDA) rather than declared
    local_mem_dynamic: bool = False
    # Whether Buffer.ptr is an address (CUDA: views of one allocation and foreign arrays at an
    # offset overlap by range) rather than an allocation's handle (OpenCL's cl_mem)
    pointers_are_addresses: bool = False
    # What the tuning lookup's architecture classes read (tune/lookup.py) where the backend knows
    # it: NVIDIA's compute capability ("90"), floats per SIMD vector of an OpenCL device.
    compute_capability: str | None = None
    native_vector_width_float: int = 0

    def __init__(self, *, index: int, name: str, vendor: str, kind: str, memory: int, compute_units: int,
                 max_work_group_size: int, max_work_item_sizes: tuple[int, ...], local_mem_size: int,
                 driver_version: str, platform: str, dtypes: tuple[str, ...], allocator: "Allocator",
                 compiler: "Compiler", launcher: "Launcher"):
        self.allocator = allocator
        self.compiler = compiler
        self.launcher = launcher
        self.index = index
        self.id = f"{self.backend}:{index}"
        self.name = name
        self.vendor = vendor
        self.kind = kind  # "gpu", "cpu" or "accelerator"
        self.memory = memory
        self.compute_units = compute_units
        self.max_work_group_size = max_work_group_size
        self.max_work_item_sizes = max_work_item_sizes
        self.local_mem_size = local_mem_size
        self.driver_version = driver_version
        self.platform = platform
        self.dtypes = dtypes
        self._dtype_set = frozenset(dtypes)
        self._kernels = BoundedMemo()  # memo for library kernels and programs on this device (LRU)
        self._lock = threading.Lock()
        self._configs = BoundedMemo(4096)  # LaunchConfig -> its checked sizes on this device
        self._local = threading.local()  # per-thread state: the scratch memory of _scratch()
        self._workspaces = BoundedMemo(256)  # (owner, nbytes) -> a zeroed _Scratch (_workspace)

    # ---- description -------------------------------------------------------------------------
    @property
    def local_mem_static(self) -> int:
        """The most local memory a kernel may declare in __local arrays: the opt-in maximum where
        arrays may exceed local_mem_size (NVIDIA's OpenCL), else local_mem_size (CUDA's static
        shared memory; past it only dynamic shared memory, Kernel.dynamic_local_bytes)."""
        return self.local_mem_optin if self.local_mem_optin and not self.local_mem_dynamic else self.local_mem_size

    def __repr__(self) -> str:
        return f"<isthmus.Device {self.id} {self.name!r} ({self.vendor})>"

    _INFO = ("id", "name", "vendor", "backend", "kind", "memory", "compute_units", "max_work_group_size",
             "max_work_item_sizes", "local_mem_size", "driver_version", "platform", "dtypes")

    def info(self) -> dict:
        """A JSON-able description (what ``isthmus devices --json`` prints)."""
        values = {k: getattr(self, k) for k in self._INFO}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}  # (JSON has no tuples)

    def identity(self) -> dict:
        """What makes compiled code and tuned configs valid: vendor, name, driver, platform."""
        return {"backend": self.backend, "vendor": self.vendor, "name": self.name,
                "driver": self.driver_version, "platform": self.platform}

    @staticmethod
    def _lookup(id) -> "Device":
        """:func:`device` for the modules this one imports (``Buffer.to`` takes an id too)."""
        return device(id)

    def supports(self, dtype) -> bool:
        return lookup(dtype).name in self.dtypes

    def check_dtype(self, dtype) -> DType:
        dt = lookup(dtype)
        if dt.name not in self._dtype_set:
            raise UnsupportedDtypeError(
                f"{dt.name} is not supported on {self.id} ({self.name}); this device supports {', '.join(self.dtypes)}")
        return dt

    # ---- memory ------------------------------------------------------------------------------
    def empty(self, shape, dtype=np.float32) -> "Buffer":
        """An uninitialized buffer of ``shape`` and ``dtype`` on this device."""
        shape = _shape(shape)
        dt = self.check_dtype(dtype)
        return Buffer._allocate(self, shape, dt, math.prod(shape) * dt.np.itemsize)

    def zeros(self, shape, dtype=np.float32) -> "Buffer":
        buf = self.empty(shape, dtype)
        if buf.nbytes:
            self._device_zero(buf._handle(), buf.nbytes)
        return buf

    def asarray(self, array) -> "Buffer":
        """A new device buffer holding a copy of a host array (NumPy or anything array-like)."""
        try:
            host = np.ascontiguousarray(array)
        except (ValueError, TypeError) as exc:  # ragged nesting, mixed types NumPy cannot hold
            raise InvalidArgumentError(f"asarray needs a rectangular array of numbers; NumPy cannot convert "
                                       f"this {type(array).__name__}: {exc}") from None
        buf = self.empty(host.shape, host.dtype)
        if buf.nbytes:
            self._host_upload(buf._handle(), host)
        return buf

    def empty_host(self, shape, dtype=np.float32) -> np.ndarray:
        """A NumPy array in page-locked host memory (full-bandwidth transfers) where the backend offers it."""
        dt = lookup(dtype)
        shape = _shape(shape)
        try:
            return self._empty_host(shape, dt.np)
        except IsthmusError:
            raise
        except Exception as exc:  # noqa: BLE001 - the driver's or NumPy's refusal, of whatever type
            raise OutOfMemoryError(f"{math.prod(shape) * dt.np.itemsize} bytes of host memory ({shape}, {dt.name}) "
                                   f"could not be allocated for {self.id}: {type(exc).__name__}: {exc}") from None

    def memory_in_use(self) -> int:
        """Bytes of device memory this process holds on this device through isthmus."""
        return self.allocator.in_use()

    def free_pool(self) -> None:
        """Hand the cached free memory of this device back to the driver (memory in use stays):
        CuPy's pool's free blocks on CUDA, isthmus' cache of freed buffers on OpenCL."""
        self.allocator.free_pool()

    # ---- kernels -----------------------------------------------------------------------------
    def compile(self, source: str, name: str, defines: dict | None = None) -> "Kernel":
        """Compile an OpenCL C kernel (one source for both backends) and return it.

        >>> k = dev.compile("__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2; }", "twice")
        >>> k(x, config=isthmus.LaunchConfig((8,)))
        """
        return Program.build(self, source, defines or {}, name, user=True).kernel(name)

    def library(self, name: str) -> "BoundOp":
        """The op ``name`` of the library (``"softmax"``, ``"gemm"``, ...; ``isthmus.ops.__all__``) or
        one registered by a user, bound to this device: calling it runs the op with the arguments of
        ``isthmus.ops.<name>``, checking that its buffers live here; ``.prepare(...)`` records it."""
        return plugins.library(self, name)

    def capture(self) -> "Graph":
        """Record launches and device copies into a graph replayed with one call:
        ``with dev.capture() as graph: ...`` then ``graph.launch()`` (see :mod:`isthmus.graph`)."""
        return Graph(self)

    def fuse(self, expression: str) -> "Fused":
        """An elementwise expression compiled into one kernel for this device (see :func:`isthmus.fuse`)."""
        return plugins.fuse(expression, device=self)

    def synchronize(self) -> None:
        """Wait until all work queued on this device has finished."""
        self._host_work("synchronize()")
        self._synchronize()

    @contextmanager
    def timer(self) -> Iterator["Timing"]:
        """Time device work with device events: ``with dev.timer() as t: ...``; then ``t.ms``."""
        timing = Timing()
        start = self._record()
        yield timing
        timing.ms = self._elapsed_ms(start, self._record())

    # ---- the one launch path ---------------------------------------------------------------------
    def launch(self, kernel: "Kernel", global_size: tuple, local_size: tuple | None, args: list) -> None:
        """Enqueue ``kernel`` (of this device) on a checked grid with ``args``: Buffers the caller
        checked (device, dtype, open) and numbers, which are converted to the declared scalar types
        here (an out-of-range value raises). ``args`` is the call's own list: it is packed in place.
        Every launch of the op layer, of eager kernel calls and of fused expressions comes here; a
        Recorder installed on the calling thread (graph capture, bench) sees it instead."""
        rec = self._recorder
        if rec is not None and rec.thread == threading.get_ident():
            rec.launch(self, kernel, global_size, local_size, args)
            return
        self.launcher.launch(kernel, global_size, local_size, args)

    def _recording(self) -> "Recorder | None":
        rec = self._recorder
        return rec if rec is not None and rec.thread == threading.get_ident() else None

    def _install(self, recorder: "Recorder", busy: str) -> None:
        """Install ``recorder`` for its thread (``busy``: the error when another one is installed)."""
        with self._lock:
            if self._recorder is not None:
                raise InvalidArgumentError(busy)
            self._recorder = recorder

    def _uninstall(self, recorder: "Recorder") -> None:
        with self._lock:
            if self._recorder is recorder:
                self._recorder = None

    def _temporary(self, nbytes: int, zeroed: bool = False):
        """Device memory for one call's intermediate results, as a launch argument: the calling
        thread's scratch (see :meth:`_scratch`), or memory the installed recorder keeps (a graph
        replayed later, from any thread, must not share the thread's scratch). ``zeroed``: filled
        with zeros before the call's launches (queued; a recorder records the fill)."""
        rec = self._recorder  # (inline, not _recording(): every reduction calls this)
        if rec is not None and rec.thread == threading.get_ident():
            return rec.temporary(self, nbytes, zeroed)
        scratch = getattr(self._local, "scratch", None)  # (_scratch's hit, inline)
        if scratch is None or scratch.nbytes < nbytes:
            scratch = self._scratch(nbytes)
        if zeroed:
            self.allocator.zero(scratch._mem, nbytes)
        return scratch.arg

    def _workspace(self, owner, nbytes: int):
        """Device memory that stays with ``owner`` (a hashable the op keeps for one configuration,
        such as its kernel) across calls, zeroed once when first made, as a launch argument: for
        kernels that tag what they leave there (softmax's split rows) and need no reset between
        launches. A recorder gives memory of its own (what it records outlives the capture and
        may be replayed from any thread: it must not share this memory)."""
        rec = self._recorder
        if rec is not None and rec.thread == threading.get_ident():
            return rec.workspace(self, nbytes)
        key = (owner, nbytes)
        found = self._workspaces.table.get(key)  # (a hit, inline and not reordered: least recently made go first)
        if found is None:
            # (two threads that both make one each use a zeroed workspace; the last stored stays)
            found = _Scratch(self, nbytes)
            self.allocator.zero(found._mem, nbytes)  # queued before any launch that uses it
            self._workspaces[key] = found
        return found.arg

    # device copies and host transfers: through the recorder when one is installed
    def _device_copy(self, dst, src, nbytes: int) -> None:
        (self._recording() or _DIRECT).copy(self, dst, src, nbytes)

    def _device_zero(self, mem, nbytes: int) -> None:
        (self._recording() or _DIRECT).zero(self, mem, nbytes)

    def _host_upload(self, mem, host) -> None:
        self._host_work("a host->device copy")
        self.allocator.upload(mem, host)

    def _host_download(self, mem, host) -> None:
        self._host_work("a device->host copy (to_numpy)")
        self.allocator.download(mem, host)

    def _host_work(self, what: str) -> None:
        """Host transfers and synchronization: a recorder on this thread may refuse them (a graph)."""
        (self._recording() or _DIRECT).host(self, what)

    def _scratch(self, nbytes: int) -> "_Scratch":
        """Device memory private to the calling thread, at least ``nbytes``, kept and handed to
        every call on this thread that asks (a reduction's partial results), so such a call
        allocates nothing. No wait is needed before reuse: all work on a device goes to its one
        in-order queue (OpenCL) or stream (CUDA), so the kernels of one call that use it run after
        those of the previous call on this thread; other threads have their own. Graph capture
        must not use it (a graph replayed later, from any thread, would share it): ops ask
        :meth:`_temporary`, which gives the recorder's memory while one is installed."""
        found = getattr(self._local, "scratch", None)
        if found is None or found.nbytes < nbytes:
            found = self._local.scratch = _Scratch(self, nbytes)
        return found

    def _check_config(self, config):
        known = config.__class__ is LaunchConfig  # (anything else: check_config says what is wrong with it)
        found = self._configs.get(config) if known else None
        if found is None:
            found = check_config(config, self.max_work_group_size, self.max_work_item_sizes, self.id,
                                 self.grid_limits)
            if known:
                self._configs[config] = found  # a config valid here once is valid here always
        return found

    # ---- hooks of the device itself (its queue or stream); the rest are its parts' ------------
    def _synchronize(self) -> None: raise NotImplementedError
    def _record(self): raise NotImplementedError  # an event (marker) queued now
    def _elapsed_ms(self, start, end) -> float: raise NotImplementedError
    def _empty_host(self, shape, dtype) -> np.ndarray: raise NotImplementedError

    def _vendor_call(self, make, buffers: list):
        """A call of the backend's vendor array library (CuPy/cuBLAS on CUDA) on ``buffers``:
        ``make(arrays)`` returns it, run here on this device's stream; None where there is none."""
        return None

    def _transfer_lane(self) -> "_TransferLane":
        """A second queue (OpenCL) or stream (CUDA) of this device for host<->device copies that must
        not wait behind the kernels queued on the device's own queue (isthmus.ray's pipeline overlaps
        one shard's copies with another's kernels)."""
        raise NotImplementedError(f"{self.id}: this backend has no transfer lane")

    def _graph(self, steps: tuple):
        """A captured Graph's steps (callables that queue work) as one callable that replays them
        all: here in turn from Python (PyOpenCL exposes no command buffers); the CUDA backend
        captures them into one CUDA graph."""
        def replay() -> None:
            for go in steps:
                go()
        return replay

    def _peer_copy(self, dst, src, src_device: "Device", nbytes: int) -> bool:
        """Copy from another device's memory without the host where the backend can (then True)."""
        return False

    # foreign interop: only the CUDA backend exports device memory
    def _array_interface(self, buf) -> dict:
        raise AttributeError("__cuda_array_interface__ exists only for CUDA buffers")

    def _dlpack(self, buf, stream):
        raise BufferError(f"DLPack export needs a CUDA buffer; {self.id} is {self.backend} (use to_numpy() for "
                          f"host data)")

    def _dlpack_device(self) -> tuple:
        raise BufferError("DLPack export needs a CUDA buffer")

    def load_safetensors(self, path):
        """The tensors of a safetensors checkpoint as buffers on this device, by name (an
        :class:`isthmus.weights.SafeTensors`; ``close()`` frees them): ``path`` is a
        .safetensors file, a model folder (its ``model.safetensors.index.json`` and shards, else its
        ``model.safetensors``) or an index .json. A damaged file raises FormatError; nothing stays
        allocated after an error. See :mod:`isthmus.weights`.

        >>> with dev.load_safetensors("Llama-3.2-1B/") as weights:
        ...     w = weights["model.norm.weight"]
        """
        from .weights import load

        return load(self, path)


# ---- the parts a backend's device holds ------------------------------------------------------------
class Allocator:
    """Device memory of one device. ``mem`` is the backend's allocation object (it frees itself
    when the last reference goes); ``queue``: another queue or stream of the device than its own
    (a _TransferLane's), else the device's."""

    def alloc(self, nbytes: int): raise NotImplementedError
    def pointer(self, mem) -> int: raise NotImplementedError  # the allocation's identity (device address, cl_mem)
    def in_use(self) -> int: raise NotImplementedError  # bytes this process holds through isthmus
    def free_pool(self) -> None: raise NotImplementedError  # cached free memory back to the driver
    def upload(self, mem, host: np.ndarray, queue=None) -> None: raise NotImplementedError  # returns when done
    def download(self, mem, host: np.ndarray, queue=None) -> None: raise NotImplementedError  # returns when done
    def copy(self, dst, src, nbytes: int, queue=None) -> None: raise NotImplementedError  # queued
    def zero(self, mem, nbytes: int, queue=None) -> None: raise NotImplementedError  # queued

    def upload_async(self, mem, offset: int, host: np.ndarray):
        """Queue a copy of ``host`` (pinned memory, untouched until the copy is done) to byte
        ``offset`` of ``mem`` on the device's queue, without waiting; returns a function that
        returns once the copy is done (what loading a checkpoint overlaps with reading the file)."""
        raise NotImplementedError


class Compiler:
    """Source to program to function. ``native``: the backend's program object."""

    def prepare_source(self, source: str) -> str: raise NotImplementedError  # what the compiler is given
    def compiler_id(self) -> dict: raise NotImplementedError  # what compiled code depends on (the cache recipe)

    def build(self, source: str, options: list[str], name: str) -> tuple:
        """(native, build log): ``options`` are ``-DNAME=value`` defines and ``-w`` (no warnings);
        a failed build raises CompileError with the log."""
        raise NotImplementedError

    def binary(self, native) -> bytes | None: raise NotImplementedError  # what the disk cache keeps
    def load_binary(self, binary: bytes, options: list[str]): raise NotImplementedError  # -> native
    def function(self, native, name: str): raise NotImplementedError  # a kernel's function (CompileError if none)
    def kernel_limits(self, kernel): raise NotImplementedError  # launch.KernelLimits of a compiled kernel


class KernelState:
    """What a backend keeps per kernel (``Kernel._backend``, made by :meth:`Launcher.kernel_state`):
    ``lock`` (OpenCL kernel objects hold their arguments: set and enqueue are one step), ``memo``
    (what the launcher remembers of the kernel's launches), ``dyn_limit`` (CUDA: the dynamic shared
    memory the driver was told the kernel may take)."""

    __slots__ = ("lock", "memo", "dyn_limit")

    def __init__(self):
        self.lock = threading.Lock()
        self.memo = None
        self.dyn_limit = 0


class Launcher:
    """Launches. ``args`` as :meth:`Device.launch` takes them are packed in place on the way: each
    Buffer as its packed argument (:meth:`buffer_arg`, which holds its memory), each number as the
    declared scalar type."""

    def kernel_state(self, kernel) -> KernelState:
        return KernelState()

    def buffer_arg(self, buf): raise NotImplementedError  # raises ClosedBufferError for a closed buffer
    def memory_of(self, packed): raise NotImplementedError  # the memory a packed buffer holds (a Plan keeps it)
    def native_arg(self, packed): raise NotImplementedError  # as the backend's own API takes it (bench)
    def launch(self, kernel, gsize, lsize, args: list) -> None: raise NotImplementedError
    def prepare(self, kernel, gsize, lsize, packed: list): raise NotImplementedError  # a Plan's launch

    def direct_call(self, kernel, gsize, lsize, args: list) -> tuple:
        """(function, args, kwargs): this launch of ``kernel`` (``args`` native, see native_arg) made
        straight through PyOpenCL or CuPy, as a user without isthmus would (isthmus bench's baselines)."""
        raise NotImplementedError


class _TransferLane:
    """What :meth:`Device._transfer_lane` gives: ``upload(buf, host)`` and ``download(buf)`` return
    when their copy on ``queue`` is done; ``wait(marker)`` waits for a marker of ``_record``."""

    def __init__(self, device: Device, queue, wait):
        self._device, self._queue, self.wait = device, queue, wait

    def upload(self, buf: Buffer, host: np.ndarray) -> None:
        self._device.allocator.upload(buf._handle(), host, self._queue)

    def download(self, buf: Buffer) -> np.ndarray:
        out = np.empty(buf.shape, buf.dtype)
        if buf.nbytes:
            self._device.allocator.download(buf._handle(), out, self._queue)
        return out


class _Scratch:
    """Memory of :meth:`Device._scratch` and :meth:`Device._workspace`: not a Buffer (it is no
    one's result and not counted in ``live_buffers()``), but it has what ``buffer_arg`` reads;
    ``arg`` is the packed argument. Freed when its holder lets go (a thread ends, a workspace is
    dropped): the memory returns to the device's in-order pool."""

    __slots__ = ("nbytes", "_mem", "_ptr", "_dt", "arg")

    def __init__(self, device: Device, nbytes: int):
        self.nbytes = nbytes
        self._mem = device.allocator.alloc(nbytes)
        self._ptr = device.allocator.pointer(self._mem)
        self._dt = True  # (open: what buffer_arg's closed check reads)
        self.arg = device.launcher.buffer_arg(self)


class Timing:
    """Filled in when a :meth:`Device.timer` block ends: ``ms`` is the device time in milliseconds."""

    ms: float = float("nan")


# ---- the layers above core ---------------------------------------------------------------------
class _Plugins:
    """What core calls in the layers above it, which ``isthmus/__init__`` connects at import (it
    loads no backend library and probes nothing): the backend modules discovery asks (each with
    ``NAME`` and ``discover()``), the op library behind :meth:`Device.kernel`, the fuser behind
    :meth:`Device.fuse`. Core imports none of them, so core, backends and ops form no import circle."""

    backends: tuple = ()
    library = None  # (device, name) -> an op bound to the device (ops.registry.BoundOp)
    fuse = None  # (expression, device=...) -> a Fused expression


plugins = _Plugins()


# ---- discovery --------------------------------------------------------------------------------
_registry_lock = threading.Lock()
_registry: list[Device] | None = None
_problems: dict[str, str] = {}
_ORDER = {"gpu": 0, "accelerator": 1, "cpu": 2}


def _discover() -> list[Device]:
    global _registry
    with _registry_lock:
        if _registry is None:
            found: list[Device] = []
            for backend in plugins.backends:
                try:
                    found.extend(backend.discover())
                except BackendUnavailableError as exc:
                    _problems[backend.NAME] = str(exc)
            _registry = found
        return _registry


def devices() -> list[Device]:
    """Every device of every available backend, CUDA first, then OpenCL in platform order."""
    return list(_discover())


def _install_hint() -> str:
    why = "; ".join(f"{name}: {msg}" for name, msg in sorted(_problems.items())) or "no devices reported"
    return (f"no usable isthmus backend ({why}). Install one: pip install pyopencl (any OpenCL driver; for a CPU "
            "device also PoCL: apt-get install pocl-opencl-icd or pip install pocl-binary-distribution) or pip "
            "install cupy-cuda12x (NVIDIA GPUs, CUDA 12; cupy-cuda13x for CUDA 13)")


def device(id: str | None = None) -> Device:
    """The device with this id (``"cuda:0"``, ``"opencl:1"``); without one, ``ISTHMUS_DEVICE`` when
    set, else the best available: a CUDA GPU, then an OpenCL GPU, then an OpenCL CPU."""
    found = _discover()
    wanted = id if id is not None else knobs.device()
    if wanted is None:
        if not found:
            raise BackendUnavailableError(_install_hint())
        rank = {b.NAME: i for i, b in enumerate(plugins.backends)}  # the backends' order: CUDA first
        return min(found, key=lambda d: (rank.get(d.backend, len(rank)), _ORDER.get(d.kind, 3)))
    if isinstance(wanted, Device):
        return wanted
    for d in found:
        if d.id == wanted:
            return d
    backend = str(wanted).split(":", 1)[0]
    if backend in _problems:
        raise BackendUnavailableError(f"device {wanted!r} needs the {backend} backend, which is unavailable: "
                                      f"{_problems[backend]}")
    if not found:
        raise BackendUnavailableError(_install_hint())
    raise InvalidArgumentError(f"no device {wanted!r}; available: {', '.join(d.id for d in found)}")
