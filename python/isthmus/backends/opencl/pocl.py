"""The __local arrays of a kernel as PoCL itself counts them, read from its program binary.

PoCL 4.0 to 6.x answer CL_KERNEL_LOCAL_MEM_SIZE with 0 for CPU devices (only level0 and stored
binaries fill the field), yet at launch the pthread device lays the kernel's automatic __local
arrays out one after another (each start aligned to MAX_EXTENDED_ALIGNMENT, 128 bytes) and aborts
the process ("automatic local buffer(s) ... doesn't fit to the local memory") when they pass
local_mem_size + max_parameter_size * 128 (lib/CL/devices/pthread/pthread_utils.c,
setup_kernel_arg_array_with_locals). The sizes it lays out are the program's kernel metadata,
which clGetProgramInfo(CL_PROGRAM_BINARIES) serializes ("poclbin", lib/CL/pocl_binary.c): so the
launch check reads them there and refuses, as a LaunchConfigError, what the driver would abort on.
"""
from __future__ import annotations

import struct

_ALIGN = 128  # PoCL's MAX_EXTENDED_ALIGNMENT on x86-64 (alignof double16)


def local_sizes(binary: bytes, kernel: str) -> tuple[int, ...] | None:
    """The sizes of ``kernel``'s automatic __local arrays in a PoCL program binary, or None when
    the binary is not one of the formats read here (pocl binary versions 9 to 11: PoCL 1.6-7.x)."""
    try:
        magic, _dev, version, nkernels, _flags, nentries = struct.unpack_from("<8sQIIQI", binary, 0)
        if magic != b"poclbin\0" or not 9 <= version <= 11:
            return None
        at = 36 + 41 + (8 if version >= 10 else 0)  # header, the build hash (hex + NUL), global vars' size
        for _ in range(nentries):  # the program's files (program.bc, ...): a size and that many bytes
            (size,) = struct.unpack_from("<Q", binary, at)
            at += 8 + size
        name = kernel.encode()
        for _ in range(nkernels):
            record, (struct_size, _bins, _arginfo, namelen) = at, struct.unpack_from("<QQII", binary, at)
            at += 24
            if binary[at:at + namelen] == name:
                at += namelen
                _nargs, nlocals = struct.unpack_from("<II", binary, at)
                return struct.unpack_from(f"<{nlocals}Q", binary, at + 8 + 24)  # after reqd_wg_size[3]
            at = record + struct_size
    except struct.error:
        return None
    return None


def local_bytes(sizes: tuple[int, ...]) -> int:
    """The local memory the arrays take as PoCL lays them out (each start aligned)."""
    end = 0
    for s in sizes:
        end = -(-end // _ALIGN) * _ALIGN + s
    return end
