"""Every environment variable isthmus reads, typed, with its default.

Nothing else in the package reads ``os.environ``: call these functions instead. They read the
environment on every call (cheaply), so a test or a long-running service can change a setting
without re-importing anything.
"""
from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

from .errors import BackendUnavailableError


def _get(name: str) -> str:
    return os.environ.get(name, "")


def device() -> str | None:
    """ISTHMUS_DEVICE: the device id to use by default (``cuda:0``, ``opencl:1``); unset: the best."""
    return _get("ISTHMUS_DEVICE").strip() or None


def cache_dir() -> Path:
    """ISTHMUS_CACHE_DIR: where compiled programs and the tuning database live (default: the user
    cache folder's ``isthmus``)."""
    value = _get("ISTHMUS_CACHE_DIR")
    if value:
        return Path(value).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("isthmus", appauthor=False))


def disk_cache() -> bool:
    """ISTHMUS_DISK_CACHE=0 turns the on-disk program cache off (programs stay cached in memory)."""
    return _get("ISTHMUS_DISK_CACHE").strip().lower() not in ("0", "false", "no", "off")


def _int(name: str, default: int) -> int:
    value = _get(name).strip()
    try:
        return max(0, int(value)) if value else default
    except ValueError:
        return default


def program_cache_bytes() -> int:
    """ISTHMUS_PROGRAM_CACHE_MB (1024): the on-disk program cache's size, least recently used
    programs evicted beyond it (0: nothing is written)."""
    return _int("ISTHMUS_PROGRAM_CACHE_MB", 1024) << 20


def program_memo_entries() -> int:
    """ISTHMUS_PROGRAM_MEMO (256): compiled programs (and library kernels) kept in memory per device."""
    return max(1, _int("ISTHMUS_PROGRAM_MEMO", 256))


def tuning_db() -> Path:
    """ISTHMUS_TUNING_DB: the user's tuning database (default ``<cache dir>/tuning.sqlite``)."""
    value = _get("ISTHMUS_TUNING_DB")
    return Path(value).expanduser() if value else cache_dir() / "tuning.sqlite"


def classpath() -> list[str]:
    """ISTHMUS_CLASSPATH: extra jars and folders for the hosted JVM, separated by ``os.pathsep``."""
    return [p for p in _get("ISTHMUS_CLASSPATH").split(os.pathsep) if p]


def jvm_path() -> str | None:
    """ISTHMUS_JVM: the libjvm to host; unset: JPype's default (JAVA_HOME)."""
    return _get("ISTHMUS_JVM").strip() or None


def maven_opts() -> str:
    """Maven's own MAVEN_OPTS: ``isthmus maven-install`` installs into its -Dmaven.repo.local."""
    return _get("MAVEN_OPTS")


def opencl_pool_bytes() -> int:
    """ISTHMUS_OPENCL_POOL_MB (1024): freed OpenCL buffers kept for reuse, per device (0: none)."""
    return _int("ISTHMUS_OPENCL_POOL_MB", 1024) << 20


def cuda_launch_graphs() -> bool:
    """ISTHMUS_CUDA_LAUNCH_GRAPHS=0: a repeated CUDA launch stays a driver call (not a one-kernel graph)."""
    return _get("ISTHMUS_CUDA_LAUNCH_GRAPHS").strip().lower() not in ("0", "false", "no", "off")


def load_staging_bytes() -> int:
    """ISTHMUS_LOAD_STAGING_KB (65536): the size of each of the two pinned host buffers that
    ``Device.load_safetensors`` reads a file through (reading one while the other is copied)."""
    return max(1, _int("ISTHMUS_LOAD_STAGING_KB", 65536)) << 10


def kernel_dir() -> Path:
    """The kernel library's OpenCL sources: ``ISTHMUS_KERNEL_DIR``, else the package ``isthmus.opencl``
    (the repository's top-level ``opencl/`` folder, installed as package data or mapped there by an
    editable install)."""
    value = _get("ISTHMUS_KERNEL_DIR")
    return Path(value).expanduser() if value else _packaged_kernel_dir()


@functools.lru_cache(maxsize=1)
def _packaged_kernel_dir() -> Path:
    spec = importlib.util.find_spec("isthmus.opencl")
    for folder in (spec.submodule_search_locations or ()) if spec else ():
        if (Path(folder) / "dtype.h").is_file():
            return Path(folder)
    raise BackendUnavailableError(
        "the kernel sources (package isthmus.opencl) are not installed: install isthmus with pip (from the wheel, "
        "or `pip install -e .` in a checkout), or point ISTHMUS_KERNEL_DIR at a checkout's opencl/ folder")
