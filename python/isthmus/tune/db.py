"""The tuning databases of this process: the user's (``ISTHMUS_TUNING_DB``) and the read-only one
shipped with the package, and the launch-time lookup over them.

At launch, :func:`lookup` falls back: exact key -> nearest problem bucket on the same device ->
same device model with another driver, first in the user's database, then in the bundled one ->
another device of the same architecture (user's, then bundled) -> nothing (the family's
defaults); the policy is :mod:`.lookup`, one database file is :mod:`.storage`. The ops remember
what they resolved (:mod:`isthmus.ops.resolve`): after the first launch of a call shape it is one
dict lookup.
"""
from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

from .. import knobs
from ..errors import DatabaseError
from ..ops.resolve import forget_resolved as forget  # drop what the ops resolved (a database changed)
from . import lookup as policy
from .exchange import import_document
# what one file is, re-exported: ``isthmus.tune.db`` is the name users and tools know
from .storage import FORMAT, SCHEMA, Database, Key, TuningDatabaseWarning, code_of, fingerprint, key_for  # noqa: F401

# ---- the process-wide user and bundled databases, and the launch-time lookup -------------------
_state_lock = threading.Lock()
_user: Database | None = None
_bundled: Database | None = None


def user() -> Database:
    """The user's database (``ISTHMUS_TUNING_DB``, default in the cache folder), opened on first use."""
    global _user
    path = knobs.tuning_db()
    with _state_lock:
        if _user is None or _user.path != path:
            if _user is not None:
                _user.close()
            _user = Database(path)
        return _user


def bundled() -> Database:
    """The read-only configs shipped in ``isthmus/tune/bundled/*.json``, loaded into memory once."""
    global _bundled
    with _state_lock:
        if _bundled is None:
            db = Database.memory()
            for f in sorted((Path(__file__).resolve().parent / "bundled").glob("*.json")):
                try:
                    doc = json.loads(f.read_text())
                    import_document(db, doc, source=f.name, skip_bad=True)
                    db.tuned_cores.update({str(k): int(v) for k, v in (doc.get("cores") or {}).items()})
                except (DatabaseError, ValueError, TypeError, AttributeError) as exc:  # a broken shipped file must not break launches
                    warnings.warn(f"bundled tuning file {f.name} skipped: {exc}", TuningDatabaseWarning)
            db.readonly = True
            _bundled = db
        return _bundled


def lookup(family, device, dt, problem: dict) -> dict | None:
    """The tuned params for this launch, or None (use the defaults). Not memoized here: the ops
    remember what they resolved (isthmus.ops.resolve), so this runs once per op call shape."""
    found = explain(family, device, dt, problem)
    return None if found is None else found[1]


def explain(family, device, dt, problem: dict) -> tuple[str, dict] | None:
    """(where, params) of the config a launch would use, or None for the defaults (not memoized);
    the fallback order is :mod:`.lookup`'s.

    A variant (``OpSpec.variant``: gemm with ``trans_b``) with nothing tuned for it anywhere takes
    its plain family's tuned config (the tunables are the same), but only where the family's rule
    treats the two alike at this problem: where the rule picks differently for the variant (gemm's
    rows kernel for ``x @ W.T`` with a few rows on a GPU), the layouts call for different configs,
    and the rule's choice for the variant stands."""
    sources = (("user", user), ("bundled", bundled))
    found = policy.explain(family, device, dt, problem, sources)
    base = family.base
    if found is None and base is not None and family.defaults(device, problem, dt) == base.defaults(device, problem, dt):
        found = policy.explain(base, device, dt, problem, sources)
        if found is not None:
            found = (f"{found[0]}, tuned without {' and '.join(family.flags)}", found[1])
    return found


def reset() -> None:
    """Close the databases and forget everything (tests; a changed ``ISTHMUS_TUNING_DB``)."""
    global _user, _bundled
    with _state_lock:
        if _user is not None:
            _user.close()
        _user = _bundled = None
    forget()
