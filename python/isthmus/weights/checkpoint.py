"""safetensors checkpoints on disk: which files a path names, and each file's header, checked.

The format (huggingface/safetensors): 8 bytes of little-endian header length ``N``, ``N`` bytes of a
JSON object ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``,
then the data; offsets count from the data's start and the tensors cover the data exactly, with no
holes or overlaps. A sharded checkpoint is a folder whose ``model.safetensors.index.json`` names the
file of every tensor (``{"weight_map": {name: file}}``). Anything else is a FormatError (a dtype
isthmus cannot hold: UnsupportedDtypeError) that names the file, the tensor and what was wrong.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import jsonsafe
from ..dtypes import DType, lookup
from ..errors import FormatError, InvalidArgumentError, UnsupportedDtypeError

if TYPE_CHECKING:  # pragma: no cover
    from ..device import Device

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
# safetensors' own limit (MAX_HEADER_SIZE): a longer header is a damaged file, not a big model
MAX_HEADER = 100_000_000
# the safetensors dtypes isthmus holds, and those it knows but refuses (no isthmus dtype for them)
DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16", "I32": "int32",
          "I64": "int64", "U8": "uint8"}
REFUSED = ("BOOL", "I8", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2",
           "F4", "C64")

@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: DType
    shape: tuple[int, ...]
    begin: int  # bytes from the start of the data
    end: int


@dataclass(frozen=True)
class File:
    path: Path
    data_start: int  # 8 + header length
    data_len: int
    tensors: list[Tensor]  # in the order of their data


@dataclass(frozen=True)
class Checkpoint:
    """The files a path names, and the index that named them (``weight_map``: tensor -> file)."""

    paths: list[Path]
    index: Path | None = None
    weight_map: dict | None = None

    @classmethod
    def find(cls, path) -> "Checkpoint":
        """A folder's index or single file, an index .json's shards, or one .safetensors file."""
        p = Path(path)
        if p.is_dir():
            if (p / INDEX).is_file():
                return cls._indexed(p / INDEX)
            if (p / SINGLE).is_file():
                return cls([p / SINGLE])
            held = sorted(q.name for q in p.iterdir())
            raise InvalidArgumentError(
                f"{path} holds neither {INDEX} nor {SINGLE}; it holds: {', '.join(held) if held else 'nothing'}. "
                f"Pass one .safetensors file's path to load that file")
        if not p.is_file():
            raise InvalidArgumentError(f"{path}: no such file or folder (give a .safetensors file, an index .json, "
                                       f"or a model folder)")
        return cls._indexed(p) if p.name.endswith(".json") else cls([p])

    @classmethod
    def _indexed(cls, index: Path) -> "Checkpoint":
        try:
            doc = jsonsafe.loads(index.read_bytes(), object_pairs_hook=_unique_keys)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # (RecursionError: nested too deep to parse)
            raise FormatError(f"{index} is not JSON: {exc}") from None
        except OSError as exc:
            raise InvalidArgumentError(f"{index} cannot be read: {exc}") from None
        weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise FormatError(f'{index} has no "weight_map" object of tensor name -> shard file name')
        shards = list(dict.fromkeys(weight_map.values()))
        missing = [s for s in shards if not (index.parent / s).is_file()]
        if missing:
            raise FormatError(f"{index} names shards that are not in {index.parent}: {', '.join(missing)}")
        return cls([index.parent / s for s in shards], index, weight_map)

    def check(self, files: list[File]) -> None:
        """Each tensor in one file only and, with an index, in the file it names."""
        where = self.index.name if self.index else ""
        seen: dict[str, Path] = {}
        for f in files:
            for t in f.tensors:
                if t.name in seen:
                    raise FormatError(f"tensor {t.name!r} is in two files: {seen[t.name]} and {f.path}")
                seen[t.name] = f.path
                said = self.weight_map.get(t.name) if self.weight_map is not None else None
                if self.index is not None and (said is None or self.index.parent / said != f.path):
                    raise FormatError(f"{f.path} holds tensor {t.name!r}, which {where} "
                                      + (f"places in {said}" if said else "does not name"))
        absent = [n for n in self.weight_map or () if n not in seen]
        if absent:
            raise FormatError(f"{where} names tensors that their shards do not hold: {', '.join(absent[:5])}"
                              + (f" and {len(absent) - 5} more" if len(absent) > 5 else ""))


def _unique_keys(pairs: list) -> dict:
    found = dict(pairs)
    if len(found) != len(pairs):
        dup = next(k for i, (k, _) in enumerate(pairs) if any(k == j for j, _ in pairs[:i]))
        raise ValueError(f"the key {dup!r} appears twice")
    return found


def read_header(path: Path, device: "Device") -> File:
    """The checked header of one safetensors file (FormatError for a damaged one)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                raise FormatError(f"{path} is {size} bytes: too short for a safetensors file (8 bytes of header "
                                  f"length first); truncated?")
            n = int.from_bytes(head, "little")
            if n > MAX_HEADER:
                raise FormatError(f"{path}: header length {n} is above safetensors' limit of {MAX_HEADER} bytes; "
                                  f"not a safetensors file, or a damaged one")
            if 8 + n > size:
                raise FormatError(f"{path}: header length {n} runs past the end of the file ({size} bytes); "
                                  f"truncated, or not a safetensors file")
            raw = fh.read(n)
    except OSError as exc:
        raise InvalidArgumentError(f"{path} cannot be read: {exc}") from None
    try:
        header = jsonsafe.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # (RecursionError: nested too deep to parse)
        raise FormatError(f"{path}: the header is not JSON ({exc}); not a safetensors file, or a damaged one") from None
    if not isinstance(header, dict):
        raise FormatError(f"{path}: the header is a JSON {type(header).__name__}, not an object of tensors")
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict):
        raise FormatError(f"{path}: __metadata__ is a JSON {type(meta).__name__}, not an object of strings")
    tensors = sorted((_tensor(path, name, entry, device) for name, entry in header.items()),
                     key=lambda t: (t.begin, t.end))
    data_len = size - 8 - n
    _check_layout(path, tensors, data_len)
    return File(path, 8 + n, data_len, tensors)


def _tensor(path: Path, name: str, entry, device: "Device") -> Tensor:
    def bad(what: str) -> FormatError:
        return FormatError(f"{path}: tensor {name!r} {what}")

    if not isinstance(entry, dict):
        raise bad(f"is a JSON {type(entry).__name__}, not an object with dtype, shape and data_offsets")
    for field in ("dtype", "shape", "data_offsets"):
        if field not in entry:
            raise bad(f"has no {field!r}")
    code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(shape, list) or not all(_count(s) for s in shape):
        raise bad(f"has shape {shape!r}: expected a list of non-negative integers")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_count(o) for o in offsets):
        raise bad(f"has data_offsets {offsets!r}: expected [begin, end], non-negative integers")
    if offsets[1] < offsets[0]:
        raise bad(f"has data_offsets {offsets!r}: its end is before its begin")
    dt = _dtype(path, name, code, device)
    nbytes = math.prod(shape) * dt.np.itemsize
    if offsets[1] - offsets[0] != nbytes:
        raise bad(f"is {code} of shape {shape} ({nbytes} bytes) but its data_offsets {offsets} span "
                  f"{offsets[1] - offsets[0]} bytes")
    return Tensor(name, dt, tuple(shape), offsets[0], offsets[1])


def _count(v) -> bool:
    return type(v) is int and v >= 0


def _dtype(path: Path, name: str, code, device: "Device") -> DType:
    if code not in DTYPES:
        why = "isthmus has no such dtype" if code in REFUSED else "not a safetensors dtype"
        raise UnsupportedDtypeError(f"{path}: tensor {name!r} has dtype {code!r} ({why}); isthmus loads "
                                    f"{', '.join(DTYPES)}: convert the checkpoint to one of them")
    dt = lookup(DTYPES[code])
    if not device.supports(dt):
        raise UnsupportedDtypeError(f"{path}: tensor {name!r} is {code} ({dt.name}), which {device.id} does not "
                                    f"support; it supports {', '.join(device.dtypes)}")
    return dt


def _check_layout(path: Path, tensors: list[Tensor], data_len: int) -> None:
    """The tensors, sorted by offset, cover the data exactly (as safetensors requires)."""
    at, last = 0, None
    for t in tensors:
        if t.end > data_len:
            raise FormatError(f"{path}: tensor {t.name!r} has data_offsets [{t.begin}, {t.end}] past the end of the "
                              f"data ({data_len} bytes); truncated?")
        if t.begin < at:
            raise FormatError(f"{path}: tensors {last.name!r} [{last.begin}, {last.end}] and {t.name!r} "
                              f"[{t.begin}, {t.end}] overlap")
        if t.begin > at:
            raise FormatError(f"{path}: data bytes [{at}, {t.begin}] belong to no tensor")
        if t.end > t.begin:
            at, last = t.end, t
    if at != data_len:
        raise FormatError(f"{path}: the {data_len - at} bytes after the last tensor's data belong to no tensor")
