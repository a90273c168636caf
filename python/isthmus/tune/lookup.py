"""Which tuned config a launch uses: the fallback policy over the user's and the bundled database.

First match wins, and every candidate's restrictions are checked again for the device at hand
(work-group and local-memory limits, divisibility for this problem), so a config that cannot run
here is skipped, never launched:

1. the user's database: this device (name and driver) at this problem bucket, then its nearest
   bucket; then the same device model with another driver (nearest bucket first); only buckets of
   the problem's shape class (a config tuned for square problems never runs a tall or narrow one);
2. the configs bundled with isthmus, the same way;
3. the user's database, then the bundled configs: another device of the same architecture and
   backend (same vendor first, then nearest bucket);
4. nothing: the kernel's defaults.

Architectures (:func:`device_arch` for the device at hand, :func:`arch_of` for a stored row, which
has only backend, vendor and name):

- NVIDIA GPUs: the compute capability (``nvidia-sm90`` for H100, H200, H20, GH200; ``nvidia-sm80`` for
  A100, ...), from CUDA for the device at hand, from a table of product names otherwise;
- AMD GPUs: the gfx target in the OpenCL device name (``gfx90a``);
- x86-64 CPUs: the SIMD width (``x86-64-simd512`` for AVX-512, ``simd256`` for AVX/AVX2, ``simd128``
  for SSE), from the LLVM CPU name that PoCL puts in its device name
  (``pthread-skylake-avx512-AMD EPYC``) or, for the device at hand, its OpenCL native vector width;
- anything else has no architecture class and falls back to the defaults.

The configs shipped for PoCL are one file per x86-64 class (``bundled/opencl-pocl-x86_64.json``:
AVX-512, ``opencl-pocl-x86-64-avx2.json``: AVX2), as CLBlast ships per-vendor defaults, so a CPU
of any name gets its class's configs at level 3. The core count is part of a CPU's class: a
bundled file names the cores its CPUs had (``"cores"``), and a CPU config is used, at any level,
only on a CPU with at most :data:`CORE_RATIO` times more or fewer cores (the shipped ones were
measured on 2 cores, so a 64-core CPU uses its own tuning or the defaults, which suit it better).
"""
from __future__ import annotations

import functools
import math
import platform
import re
import sqlite3
import warnings
from typing import Iterator

from ..errors import DatabaseError
from ..ops.spec import shape_class
from .storage import TuningDatabaseWarning, key_for

# LLVM x86 CPU names (as PoCL reports them) -> SIMD width in bits for float arithmetic
_X86_SIMD = {
    512: ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client", "icelake-server",
          "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids-d", "graniterapids",
          "diamondrapids", "znver4", "znver5", "knl", "knm", "x86-64-v4"),
    256: ("sandybridge", "ivybridge", "haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
          "arrowlake-s", "arrowlake", "lunarlake", "pantherlake", "gracemont", "sierraforest", "grandridge",
          "clearwaterforest", "znver1", "znver2", "znver3", "bdver1", "bdver2", "bdver3", "bdver4", "btver2",
          "x86-64-v3"),
    128: ("nehalem", "westmere", "core2", "penryn", "bonnell", "atom", "silvermont", "slm", "goldmont-plus",
          "goldmont", "tremont", "btver1", "amdfam10", "x86-64-v2", "x86-64"),
}
_POCL_PREFIX = re.compile(r"^(?:pthread|cpu-minimal|cpu-tbb|cpu|basic|tbb)-(.+)$")

# NVIDIA product names -> compute capability (names as CUDA and NVIDIA's OpenCL report them)
_NVIDIA = (
    (re.compile(r"\b(?:GH200|H100|H200|H800|H20)\b"), "90"),
    (re.compile(r"\b(?:GB200|B100|B200)\b"), "100"),
    (re.compile(r"\b(?:GB300|B300)\b"), "103"),
    (re.compile(r"RTX 50\d0\b|RTX PRO \d+ Blackwell"), "120"),
    (re.compile(r"\b(?:L4|L20|L40S?)\b|RTX 40\d0\b|RTX \d000 Ada"), "89"),
    (re.compile(r"\b(?:A100|A800|A30)\b"), "80"),
    (re.compile(r"\b(?:A10G?|A16|A2|A40)\b|RTX 30\d0\b|RTX A\d000\b"), "86"),
    (re.compile(r"\bT4\b|RTX 20\d0\b|TITAN RTX|Quadro RTX"), "75"),
    (re.compile(r"\bV100\b|TITAN V\b"), "70"),
)


def arch_of(backend: str, vendor: str, name: str) -> str | None:
    """The architecture class of a device known only by its identity strings, or None."""
    if "nvidia" in vendor.lower():
        return next((f"nvidia-sm{cc}" for pattern, cc in _NVIDIA if pattern.search(name)), None)
    gfx = re.match(r"^(gfx[0-9a-f]+)", name.strip())
    if gfx and backend == "opencl":
        return f"amd-{gfx.group(1)}"
    width = _pocl_simd_width(name)
    return f"x86-64-simd{width}" if width else None


def _pocl_simd_width(name: str) -> int | None:
    found = _POCL_PREFIX.match(name.strip())
    if not found:
        return None
    rest = found.group(1)
    return next((width for width, cpus in _X86_SIMD.items() for cpu in cpus
                 if rest == cpu or rest.startswith(cpu + "-")), None)


def device_arch(device) -> str | None:
    """The architecture class of the device at hand (it may know more than its name says)."""
    if device.compute_capability:
        return f"nvidia-sm{device.compute_capability}"
    ident = device.identity()
    arch = arch_of(ident["backend"], ident["vendor"], ident["name"])
    width = device.native_vector_width_float
    if arch is None and width and device.kind == "cpu" and platform.machine().lower() in ("x86_64", "amd64"):
        return f"x86-64-simd{32 * width}"  # an OpenCL CPU device is this host's CPU
    return arch


def explain(family, device, dt, problem: dict, sources) -> tuple[str, dict] | None:
    """(where, params) of the config a launch uses, or None for the defaults. ``sources`` are
    (name, database getter) pairs in order (the user's, then the bundled one)."""
    key = key_for(family, device, dt.name, problem)
    fits = _fits_here(family, device, problem, dt)
    shape = shape_class(key.bucket)
    # each database is read once, and only when the sources before it had nothing that fits
    rows = functools.cache(lambda get: [r for r in _read(lambda: get().best_rows(key))
                                        if shape_class(r[3]) == shape and _cores_fit(device, get(), r[1])])
    for name, get in sources:
        for level, params in _same_device(rows(get), key):
            if fits(params):
                return f"{name} database, {level}", params
    arch = device_arch(device)
    if arch is None:
        return None
    for name, get in sources:
        for params in _same_arch(rows(get), key, arch):
            if fits(params):
                return f"{name} database, same architecture ({arch})", params
    return None


def _read(rows) -> list:
    """``rows()`` as a list, or none (with a warning) when the database cannot be opened or fails while
    being read: an unwritable cache, a misconfigured ISTHMUS_TUNING_DB (which tuning and ``isthmus db``
    report as an error) or a file damaged while open must not stop launches, which use the next source."""
    try:
        return list(rows())
    except (sqlite3.Error, OSError, DatabaseError) as exc:
        warnings.warn(f"tuning database lookup failed ({type(exc).__name__}: {exc}); this launch uses the next "
                      f"source (the bundled configs, else the defaults)", TuningDatabaseWarning)
        return []


CORE_RATIO = 4  # a CPU config applies to CPUs with at most this many times more, or fewer, cores


def _cores_fit(device, store, name: str) -> bool:
    """Whether a row tuned on the CPU ``name`` suits this device's core count: a config tuned on 2
    cores (few work-groups: a reduction with GROUPS=2) would leave most of a 64-core CPU idle.
    True where either count is unknown (a GPU, a row of the user's own machines)."""
    tuned_on = getattr(store, "tuned_cores", {}).get(name)
    if device.kind != "cpu" or not tuned_on:
        return True
    here = device.compute_units
    if not here:
        return True
    return max(here, tuned_on) <= CORE_RATIO * min(here, tuned_on)


def _fits_here(family, device, problem: dict, dt):
    names = {t.name for t in family.tunables}

    def fits(params) -> bool:
        return isinstance(params, dict) and set(params) == names and family.is_valid(params, device, problem, dt)
    return fits


def _distance(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    return sum(abs(math.log2(x) - math.log2(y)) for x, y in zip(a, b))


def _same_device(rows, key) -> Iterator[tuple[str, dict]]:
    """(level, params) of this device model's rows: exact, nearest bucket, other driver."""
    ranked = [(0 if (driver == key.driver and bucket == key.bucket) else 1 if driver == key.driver else 2,
               _distance(bucket, key.bucket), params)
              for vendor, name, driver, bucket, params in rows if name == key.device and vendor == key.vendor]
    for level, _, params in sorted(ranked, key=lambda r: r[:2]):
        yield ("exact", "nearest bucket", "other driver")[level], params


def _same_arch(rows, key, arch: str) -> Iterator[dict]:
    """Params tuned on other devices of architecture ``arch``: same vendor first, then nearest bucket."""
    ranked = [(vendor != key.vendor, _distance(bucket, key.bucket), params)
              for vendor, name, _, bucket, params in rows
              if not (name == key.device and vendor == key.vendor)  # consulted at the levels before
              and arch_of(key.backend, vendor, name) == arch]
    for *_, params in sorted(ranked, key=lambda r: r[:2]):
        yield params
