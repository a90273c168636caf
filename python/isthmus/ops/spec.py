"""An op is a value: one frozen spec per op (per kernel family) says everything the runtime,
the tuner, the benchmarks, the tests, the docs and the Java SPI need to know about it.

- the kernel: its OpenCL source, entry points, dtypes, fixed ``-D`` macros, storage types;
- its tunable parameters (compile-time ``-D`` macros with values, a default, restrictions, the
  variant they belong to) and the rule that picks them for a problem before any tuning;
- the problem sizes a call's inputs give: their names and where they come from (``x.shape[0]``);
- how it runs. A single-launch op declares it: its arguments (:class:`Tensor` with a rank and
  shape links, :class:`Scalar` with a default), its output rule (:class:`Output`: new, ``out=``,
  in place) and its launch (:class:`Launch`: entry, grid, argument order); :mod:`.run` makes the
  public function (``isthmus.ops.<name>``) from that. An op whose launch is not one kernel
  (reduce, split-K gemm, softmax's workspace) gives ``run``, written against the same parts;
- how it is checked and measured: ``reference(xp, ...)`` (one formula for NumPy and CuPy, in the
  kernel's accumulator precision: NumPy's host timing and the bench's vendor call; on float64
  inputs the tests' truth, :meth:`OpSpec.sample_expect` with ``exact``), its tolerance and error kind, sample problems (:class:`Sizes`: standard, tiny, odd), sample
  inputs for a problem, the bytes it moves and the flops it does.

Every spec is in one registry (:mod:`.registry`): the library's, one file each in ``ops/specs``,
and the tunable kernels users declare (``isthmus.tune.declare``).
"""
from __future__ import annotations

import dataclasses
import functools
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from .. import knobs
from ..dtypes import DType
from ..errors import InvalidArgumentError, UnsupportedDtypeError
from ..kernel import Kernel
from ..program import Program
from .run import REQUIRED, Launch, Output, Scalar, Tensor, declared  # noqa: F401 - the declaration's vocabulary


@dataclass(frozen=True)
class Tunable:
    name: str
    values: tuple
    default: Any
    # (name, values): the tunable matters only while the tunable `name` (listed before it) holds
    # one of `values` (a variant's own parameters); otherwise it stays at its default, so the
    # search space holds each variant once instead of the product of all variants' parameters.
    # Several such pairs in a tuple: all of them must hold.
    when: tuple | None = None

    def conditions(self) -> tuple:
        """The (name, values) pairs that must all hold for the tunable to matter (none: always)."""
        if self.when is None:
            return ()
        return self.when if isinstance(self.when[0], tuple) else (self.when,)

    def applies(self, params: dict) -> bool:
        return all(params.get(name) in values for name, values in self.conditions())


@dataclass(frozen=True)
class Flag:
    """A boolean argument of an op's call that compiles its kernel differently (gemm's ``trans_b``
    compiles ``-DTRANS_B=1``): a variant. Each value set of an op's flags is its own family spec
    (:meth:`OpSpec.variant`), so its own tuning key, which the tuner, the lookup and the launch share."""

    name: str  # the call's keyword (trans_b); the CLI's --trans-b, Java's Tuner.flag("trans_b", true)
    define: str  # the -D macro it compiles as (TRANS_B)


# (id of a spec, its flags that are set) -> that variant of it (OpSpec.variant)
_variants: dict[tuple[int, tuple[str, ...]], "OpSpec"] = {}
_variants_lock = threading.Lock()

@dataclass(frozen=True)
class Sizes:
    """Sample problems: ``gpu``/``cpu`` (the standard ones on each kind of device), ``quick``,
    ``tiny`` (host overhead), ``odd`` (the tests': 1, primes, non-multiples of any work-group)."""
    gpu: dict
    cpu: dict
    quick: dict
    tiny: dict
    odd: tuple[dict, ...]


# the sample problems most ops share, by vocabulary
ELEMENTS = Sizes(gpu={"n": 64 << 20}, cpu={"n": 16 << 20}, quick={"n": 1 << 20}, tiny={"n": 1 << 10},
                 odd=({"n": 1}, {"n": 1009}, {"n": 65537}))
ROWS_COLS = Sizes(gpu={"rows": 8192, "cols": 8192}, cpu={"rows": 2048, "cols": 2048},
                  quick={"rows": 512, "cols": 1024}, tiny={"rows": 8, "cols": 32},
                  odd=({"rows": 1, "cols": 7}, {"rows": 13, "cols": 257}, {"rows": 97, "cols": 1}))
MNK = Sizes(gpu=dict.fromkeys("mnk", 4096), cpu=dict.fromkeys("mnk", 512), quick=dict.fromkeys("mnk", 256),
            tiny=dict.fromkeys("mnk", 16), odd=({"m": 1, "n": 5, "k": 3}, {"m": 17, "n": 33, "k": 65}))


# eq=False: a spec is itself (hash and == by identity), so that resolve's memo finds its steps by
# the spec in one dict lookup; two specs with equal fields are still two ops
@dataclass(frozen=True, eq=False)
class OpSpec:
    name: str
    source: str  # file in opencl/
    entries: tuple[str, ...]  # kernel functions the op launches
    dtypes: tuple[str, ...]
    tunables: tuple[Tunable, ...]
    # names of the problem sizes (n; rows, cols; m, n, k); given as {name: where it comes from}
    # ("x.size", "x.shape[0]": expressions over the tensors' names), the names, and ``sources``
    problem: tuple[str, ...]
    restrictions: tuple[str, ...] = ()  # Python expressions over tunables, problem sizes and device limits
    defines: tuple[tuple[str, Any], ...] = ()  # fixed -D macros
    storage: tuple[tuple[str, str], ...] = ()  # dtype name -> storage ctype override
    cpu_defaults: tuple[tuple[str, Any], ...] = ()  # defaults that suit CPU devices better
    # (problem buckets, device, dtype, params) -> the tunables the problem's shape calls for (a
    # variant, a tile), merged over the defaults ``params``; it depends only on the buckets, since
    # a tuned config applies per bucket. Used where no tuned config is found.
    rule: Callable[[dict, Any, Any, dict], dict] | None = field(default=None, compare=False)
    # ---- how it runs (a declared single-launch op: args, out, launch; else run)
    args: tuple = ()  # Tensor and Scalar arguments, in the public function's order
    out: Output | None = None
    launch: Launch | None = None
    run: Callable | None = field(default=None, compare=False)  # the public function, isthmus.ops.<name>
    call: Callable | None = field(default=None, compare=False)  # a declared kernel's launch for the tuner (no run)
    # ---- how it is checked and measured (None for a kernel family that is not an op)
    # (xp, *the public function's arguments as host arrays) -> the result: one formula for NumPy and
    # CuPy, in the kernel's accumulator precision
    reference: Callable | None = field(default=None, compare=False)
    inputs: Callable | None = field(default=None, compare=False)  # (problem, dtype, rng) -> host arrays
    in_place: tuple[int, ...] = ()  # inputs the call overwrites (default: the Output's in_place tensor)
    out_arg: str = "out"  # the run's parameter that takes an existing output (gemm: c)
    moved: Callable | None = field(default=None, compare=False)  # (problem, itemsize) -> bytes moved
    flops: Callable | None = field(default=None, compare=False)  # problem -> floating-point operations
    tolerance: float = 4.0  # relative error allowed, in units of the dtype's (workloads.tolerance)
    # how a result's error is judged: "relative" (norm of the difference over the reference's);
    # "magnitude" (over the sum of the inputs' magnitudes: a sum of mixed signs can cancel to ~0)
    error: str = "relative"
    sizes: Sizes | None = field(default=None, compare=False)  # sample problems (bench, workloads, the tests)
    sources: tuple[tuple[str, str], ...] = ()  # (problem size, expression over the tensors) (see problem)
    summary: str = ""  # one line, for listings and opencl/README.md
    doc: str = ""  # a declared op's docstring (its public function's, the stub's)
    library: bool = True  # one of isthmus.ops (False: part of another op, or a user's kernel)
    # ---- which kernels a call launches: every consumer (run, tuner, lookup, tests) goes through these
    # dtype name -> the family spec whose kernels run that dtype (gemm: float16/bfloat16 -> gemm_mma);
    # a dtype not listed runs this spec's own kernels (see family())
    families: tuple[tuple[str, "OpSpec"], ...] = field(default=(), compare=False, repr=False)
    # the call's flags that are variants (see Flag, variant()); a spec in families lists the same ones
    variants: tuple[Flag, ...] = ()
    # the variant this spec is: its flags that are set (() for the plain spec) and the plain spec
    flags: tuple[str, ...] = ()
    base: "OpSpec | None" = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if isinstance(self.problem, dict):
            object.__setattr__(self, "sources", tuple(self.problem.items()))
            object.__setattr__(self, "problem", tuple(self.problem))
        # a declared op: the run written from it (again for a copy: a replaced field is its own op)
        if self.launch is not None and (self.run is None or getattr(self.run, "_declared", False)):
            object.__setattr__(self, "run", declared(self))
        if not self.in_place and self.out is not None and self.out.in_place is not None:
            tensors = [a.name for a in self.args if isinstance(a, Tensor)]
            object.__setattr__(self, "in_place", (tensors.index(self.out.in_place),))

    def completed(self, **fields) -> "OpSpec":
        """This spec with more fields (how a spec file adds the op's functions below its declaration)."""
        return dataclasses.replace(self, **fields)

    # ---- families and variants -----------------------------------------------------------------
    def family(self, dtype) -> "OpSpec":
        """The family spec whose kernels a call of this op on ``dtype`` (a name, DType or None) runs."""
        return self._family_of.get(getattr(dtype, "name", dtype), self)

    @functools.cached_property
    def _family_of(self) -> dict:
        """``families`` as a dict (a call's lookup, made once)."""
        return dict(self.families)

    def variant(self, **flags) -> "OpSpec":
        """This family compiled for a call's ``flags`` (``trans_b=True``): the spec itself when none is
        set, else one spec per value set (the same object each time: the tuner forces it, the launch
        resolves it), whose fixed ``-D`` macros (so whose tuning key) carry the flags and whose rule
        is called with ``flags=`` (the value set as a dict)."""
        known = {f.name for f in self.variants}
        unknown = set(flags) - known
        if unknown:
            raise InvalidArgumentError(f"{self.name} has no variant flag {', '.join(sorted(unknown))}"
                                       + (f"; its flags are {', '.join(sorted(known))}" if known else ""))
        on = tuple(f.name for f in self.variants if flags.get(f.name))
        if not on:
            return self
        with _variants_lock:  # (the value holds this spec as its base: the id stays this spec's)
            found = _variants.get((id(self), on))
            if found is None:
                values = {f.name: f.name in on for f in self.variants}
                found = _variants[id(self), on] = dataclasses.replace(
                    self, defines=self.defines + tuple((f.define, int(values[f.name])) for f in self.variants),
                    rule=None if self.rule is None else functools.partial(self.rule, flags=values), flags=on,
                    base=self)
        return found

    def variant_sets(self) -> list[dict]:
        """Every value set of the op's flags as keyword arguments, the plain call first."""
        return [{f.name: bool(i >> j & 1) for j, f in enumerate(self.variants)} for i in range(1 << len(self.variants))]

    # ---- sample calls: the tests', the tuner's, the bench's, the docs' -------------------------
    def _sample_args(self, tensors) -> list:
        """The public function's positional arguments around the sample ``tensors`` (in the order
        ``inputs`` makes them): a declared op's scalars at their sample values."""
        if not self.args:  # an op with its own run: the tensors
            return list(tensors)
        tensors = iter(tensors)
        missing = [a.name for a in self.args if isinstance(a, Scalar) and a.sample_value is REQUIRED]
        if missing:
            raise InvalidArgumentError(f"{self.name}: no sample value for {', '.join(missing)} (Scalar(sample=...))")
        # (an optional tensor the sample inputs stop before is not given)
        return [(next(tensors, None) if a.optional else next(tensors)) if isinstance(a, Tensor) else a.sample_value
                for a in self.args]

    def call_defines(self) -> dict[str, tuple[int, ...]]:
        """The ``-D`` macros a call of a declared op decides from its arguments, with their values
        (an optional tensor's ``HAS_<NAME>``: 0 or 1); they are not tuned."""
        return {a.define: (0, 1) for a in self.args if isinstance(a, Tensor) and a.optional}

    def sample_call(self, *tensors, out=None, **flags):
        """The op on the sample inputs (device buffers) with its variant ``flags``, into ``out`` when given."""
        args = self._sample_args(tensors)
        return self.run(*args, **flags) if out is None else self.run(*args, **flags, **{self.out_arg: out})

    def sample_expect(self, *tensors, xp=np, exact: bool = False, **flags):
        """The reference on the sample inputs (host arrays; ``xp``: their array module). ``exact``:
        float inputs taken to float64 and the result rounded to the first input's dtype (the
        tests' truth: float64 arithmetic, whatever the kernel accumulates in); integer inputs as they
        are (the result in the reference's dtype: an integer sum's int64)."""
        if exact and (tensors[0].dtype.kind == "f" or tensors[0].dtype.name == "bfloat16"):
            dtype = tensors[0].dtype
            tensors = [t.astype(np.float64) if t.dtype.kind == "f" or t.dtype.name == "bfloat16" else t
                       for t in tensors]
            return xp.asarray(self.reference(xp, *self._sample_args(tensors), **flags)).astype(dtype)
        return self.reference(xp, *self._sample_args(tensors), **flags)

    def result_error(self, got, ref, host=(), **flags) -> float:
        """The error of a result ``got`` (host array) against the reference's ``ref`` for the host
        inputs ``host`` (of a call with the variant ``flags``), of the spec's ``error`` kind:
        "relative" (the norm of the difference over the reference's), "magnitude" (over the sum of
        the inputs' magnitudes: a sum of mixed signs can cancel to near zero, and its rounding error
        scales with the magnitudes; relative where no inputs are given). 0 for a result equal to the
        reference. Every checker judges a result by it (the tests, ``Workload.error``, the tuner's
        check), so an op whose kernel may rightly differ from its reference (sample, at a boundary
        of the distribution) says where, once."""
        if self.error == "magnitude" and len(host):
            scale = sum(float(np.abs(np.asarray(h).astype(np.float64)).sum()) for h in host) or 1.0
            diff = np.asarray(got).astype(np.float64) - np.asarray(ref).astype(np.float64)
            return float(np.linalg.norm(diff.ravel())) / scale
        return rel_error(got, ref)

    @property
    def has_out(self) -> bool:
        """The op takes ``out=`` (a declared op's output rule, or a run with an ``out`` parameter)."""
        if self.out is not None:
            return self.out.in_place is None
        import inspect

        return self.run is not None and self.out_arg in inspect.signature(self.run).parameters

    # ---- parameters --------------------------------------------------------------------------
    def defaults(self, device, problem: dict | None = None, dtype: DType | None = None) -> dict:
        """The config used where no tuned one applies: the tunables' defaults (CPU ones on CPU
        devices), then what the family's rule picks for ``problem`` when one is given."""
        params = {t.name: t.default for t in self.tunables}
        if device.kind == "cpu":
            params.update(dict(self.cpu_defaults))
        if self.rule is not None and problem is not None:
            buckets = dict(zip(self.problem, problem_bucket(self, problem)))
            params.update(self.rule(buckets, device, dtype, dict(params)))
        return params

    @functools.cached_property
    def _restriction_code(self) -> list:
        return [compile(r, f"<{self.name} restriction>", "eval") for r in self.restrictions]

    def is_valid(self, params: dict, device, problem: dict | None = None, dtype: DType | None = None) -> bool:
        for t in self.tunables:
            if params.get(t.name) not in t.values or (params[t.name] != t.default and not t.applies(params)):
                return False
        ns = {**{p: 1 << 20 for p in self.problem},  # a space asked for without a problem: assume a large one
              **(problem or {}), "max_work_group_size": device.max_work_group_size,
              "local_mem_size": device.local_mem_size,
              # the most a work-group may use where a device allows more than local_mem_size
              # (Device.local_mem_optin: CUDA's dynamic shared memory, NVIDIA OpenCL's static
              # arrays); elsewhere local_mem_size
              "local_mem_optin": device.local_mem_optin or device.local_mem_size,
              "is_cpu": device.kind == "cpu", "wgmma": device.wgmma,
              "acc_size": 8 if dtype is not None and dtype.acc in ("double", "long") else 4,
              # the variant flags' macros (gemm's TRANS_A, TRANS_B: 0 in the plain family)
              **{f.define: 0 for f in self.variants}, **dict(self.defines),
              "min": min, "max": max, **params}
        return all(eval(code, {"__builtins__": {}}, ns) for code in self._restriction_code)

    def space(self, device, problem: dict | None = None, dtype: DType | None = None) -> Iterator[dict]:
        """Every valid combination of tunable values (the search space)."""
        def walk(i, acc):
            if i == len(self.tunables):
                if self.is_valid(acc, device, problem, dtype):
                    yield dict(acc)
                return
            t = self.tunables[i]
            for v in t.values if t.applies(acc) else (t.default,):
                acc[t.name] = v
                yield from walk(i + 1, acc)
        yield from walk(0, {})

    # ---- compiled kernels --------------------------------------------------------------------
    def check_dtype(self, device, dt: DType) -> None:
        if dt.name not in self.dtypes:
            raise UnsupportedDtypeError(f"{self.name} does not support {dt.name}; it supports {', '.join(self.dtypes)}")
        device.check_dtype(dt)

    def source_text(self) -> str:
        return kernel_source(self.source)

    def kernels(self, device, dt: DType, params: dict) -> dict[str, Kernel]:
        """The family's entry points compiled for ``dt`` with ``params`` (memoized per device); a
        tunable ``params`` leaves out is passed at its default (the .cl files hold no defaults)."""
        params = {**{t.name: t.default for t in self.tunables}, **params}
        key = ("family", self.name, self.defines, dt.name, tuple(sorted(params.items())))
        found = device._kernels.get(key)
        if found is None:
            ctype = dict(self.storage).get(dt.name, dt.ctype)
            acc = dt.acc if ctype == dt.ctype else ctype
            defines = {"T": ctype, "ACC": acc, "IS_HALF": int(ctype == "half"), **dict(self.defines), **params}
            if dt.name == "bfloat16" and acc == "float":  # ushort bits that LOAD/STORE convert
                defines["IS_BF16"] = 1
            program = Program.build(device, self.source_text(), defines, self.entries[0])
            found = device._kernels[key] = {name: program.kernel(name) for name in self.entries}
        return found


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    """||out - ref|| / ||ref|| in float64 (over 1 where the reference is all zeros)."""
    ref64 = np.asarray(ref).astype(np.float64)
    denom = np.linalg.norm(ref64.ravel()) or 1.0
    return float(np.linalg.norm((np.asarray(out).astype(np.float64) - ref64).ravel()) / denom)


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([A-Za-z0-9_.]+)"[ \t]*$', re.M)


def kernel_source(name: str, read: Callable[[str], str] | None = None) -> str:
    """dtype.h and the kernel file ``name`` of opencl/ as one self-contained text: each
    ``#include "FILE"`` of a file in opencl/ is replaced by FILE's text (its own includes expanded,
    each file once), so every compiler (NVRTC, NVIDIA's OpenCL, PoCL) gets the same text and a
    shared header (mma.h) is part of the source a tuned config is keyed by. ``read(file)`` gives a
    file's text (default: the file in opencl/; benchmarks/tools/rehash_bundled passes old copies)."""
    kdir = knobs.kernel_dir()
    if read is None:
        def read(f: str) -> str:
            return (kdir / f).read_text()
    seen: set[str] = set()

    def expand(text: str) -> str:
        def one(m: re.Match) -> str:
            f = m.group(1)
            if f in seen or not (kdir / f).is_file():
                return "" if f in seen else m.group(0)
            seen.add(f)
            return expand(read(f))
        return _INCLUDE.sub(one, text)

    return read("dtype.h") + "\n" + expand(read(name))


def bucket(value: int) -> int:
    """Problem sizes are looked up by bucket: the next power of two."""
    return 1 if value <= 1 else 1 << (int(value) - 1).bit_length()


def problem_bucket(family: OpSpec, problem: dict) -> tuple[int, ...]:
    """The problem's bucket: each size (in the family's order) rounded up to a power of two."""
    return tuple(bucket(int(problem[p])) for p in family.problem)


# Shape classes: a dimension is tiny (<= 16: a batch, a vector, a tall or wide matrix), small
# (<= 512: attention-width rows, skinny gemm) or big; a problem whose big dimensions differ by
# 8x or more is elongated (vocabulary-width rows).  Thresholds are on buckets, so a class is a
# function of the bucket and old tuning records map to their class unchanged.
_TINY, _SMALL, _ELONGATED = 16, 512, 8


def shape_class(buckets: tuple[int, ...]) -> str:
    """The shape class of a problem bucket, e.g. ``"bb"`` for 8192x8192, ``"bs"`` for 262144x128,
    ``"bb/e"`` for 4096x32000, ``"tbb"`` for gemm 16x4096x4096; ``""`` for a 1-D problem (a
    length has no shape). A tuned config is applied across buckets only within its class, so one
    tuned at 8192^2 never runs 262144x128."""
    if len(buckets) < 2:
        return ""
    tags = "".join("t" if b <= _TINY else "s" if b <= _SMALL else "b" for b in buckets)
    big = [b for b in buckets if b > _SMALL]
    return tags + ("/e" if len(big) >= 2 and max(big) >= _ELONGATED * min(big) else "")


def sample(rng, shape, dtype) -> np.ndarray:
    """A random host array for a spec's sample inputs: normal values for floats (drawn in the
    dtype where NumPy can, so large inputs are made fast), 0..99 for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 100, size=shape, dtype=dtype)
    if dtype in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
