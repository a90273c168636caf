"""Tuned configs everywhere: tune once per distinct device model of a pool, install in every actor.

A device model is what the tuning database keys a config by: backend, vendor, device name and
driver. One actor of each model tunes into a private database and exports it (the validated JSON
of ``isthmus db export``); the documents are merged and every actor imports the result into its
node's user database, through the object store or through a file the user names (a path every
node can read: a shared file system). An actor whose model has no entry keeps using the configs
shipped with isthmus, or the kernel's defaults: the ordinary lookup (``isthmus.tune.db``).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from isthmus.tune.db import FORMAT, SCHEMA

_MODEL = ("backend", "vendor", "name", "driver")


@dataclass(frozen=True)
class TuningReport:
    """``models``: one (model, device id, actor slot) per distinct device model, the actor that tuned
    it; ``document``: the merged export; ``imported``: entries each actor imported."""

    models: tuple
    document: dict
    imported: tuple


def tune_pool(pool, kernel: str, problem: dict, path, options: dict) -> TuningReport:
    import ray

    infos = pool.actors()
    chosen: dict = {}
    for member, info in zip(pool._members, infos):
        model = tuple(info["identity"][k] for k in _MODEL)
        chosen.setdefault(model, (member, info))
    docs = ray.get([m.handle.tune.remote(kernel, problem, options) for m, _ in chosen.values()])
    merged = {"format": FORMAT, "schema": SCHEMA, "entries": [e for d in docs for e in d["entries"]]}
    if path is not None:
        _write(Path(path), merged)
    imported = pool.install_tuning(merged if path is None else Path(path))
    models = tuple((dict(zip(_MODEL, model)), info["device"]["id"], m.slot) for model, (m, info) in chosen.items())
    return TuningReport(models, merged, tuple(imported))


def _write(path: Path, doc: dict) -> None:
    # atomic: an actor reading the file while it is replaced sees the old or the new, never half
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)
