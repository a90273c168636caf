"""JSON from outside (tuning exports, safetensors headers, database rows) parsed with its nesting
bounded first: ``json.loads`` recurses once per level, and on some Pythons that recursion is not
bounded (3.12.3 under pytest-xdist crashed on 200,000 nested brackets instead of raising
RecursionError). The depth is counted without recursion and a deeper text is a ValueError, which
every caller already turns into its typed error."""
from __future__ import annotations

import json
import re

import numpy as np

MAX_DEPTH = 64  # far above any document isthmus reads (a tuning export nests 4 levels)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text``: over the brackets outside
    strings, +1 for each opening one and -1 for each closing one, the running maximum."""
    brackets = _BRACKETS.findall(_STRING.sub("", text))
    if not brackets:
        return 0
    codes = np.frombuffer("".join(brackets).encode("ascii"), np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int64)
    return int(np.cumsum(steps).max())


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, **kwargs):
    """``json.loads(text, **kwargs)``; ValueError when ``text`` nests deeper than ``max_depth``."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    found = depth(text)
    if found > max_depth:
        raise ValueError(f"JSON nested {found} levels deep (at most {max_depth} are read)")
    return json.loads(text, **kwargs)
