"""Install, from a Ray bundle's wheels, only the dependencies this interpreter lacks.

    python3 benchmarks/tools/ray_deps.py BUNDLE TARGET [NAME...]     (or python -m benchmarks ray_deps ...)

BUNDLE: the unpacked ``rayg`` folder of ``ray_bundle.sh`` (``site/`` holds Ray, ``whl/`` the wheels
of its dependencies); TARGET: where missing ones are installed (put it on PYTHONPATH after
``BUNDLE/site``); NAME: more requirements to check (isthmus's ``platformdirs``). Ray's own
requirements are read from its METADATA; a requirement is met when this interpreter has a
distribution of that name whose version satisfies it, else the bundle's wheel is installed, and
that wheel's requirements are checked the same way. One line says what was found and what was
installed; a requirement neither met nor in the bundle ends the run with a message that names it.
"""
from __future__ import annotations

import email.parser
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

SMOKE = "needs an unpacked Ray bundle (benchmarks/tools/ray_bundle.sh); tests/benchmarks/test_ray_deps.py covers it"


def _packaging(whl: Path):
    """``packaging`` (from this interpreter, else the bundle's pure-Python wheel, imported from the zip)."""
    try:
        import packaging.requirements  # noqa: F401
    except ImportError:
        wheel = next(whl.glob("packaging-*.whl"), None)
        if wheel is None:
            raise SystemExit("ray deps: packaging is missing here and not in the bundle") from None
        sys.path.insert(0, str(wheel))
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    return Requirement, canonicalize_name


def _requires(meta_text: str, Requirement) -> list:
    meta = email.parser.Parser().parsestr(meta_text)
    out = []
    for line in meta.get_all("Requires-Dist") or ():
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req)
    return out


def _wheels(whl: Path, canonicalize_name) -> dict:
    """canonical name -> (version, path) of each wheel in the bundle."""
    found = {}
    for p in sorted(whl.glob("*.whl")):
        name, version = p.name.split("-")[:2]
        found[canonicalize_name(name)] = (version, p)
    return found


def _wheel_meta(path: Path) -> str:
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return z.read(name).decode()


def resolve(bundle: Path, extra: list[str]) -> tuple[list, list]:
    """(present: 'name version' strings, to_install: wheel paths)."""
    whl = bundle / "whl"
    Requirement, canonicalize_name = _packaging(whl)
    ray_meta = next((bundle / "site").glob("ray-*.dist-info/METADATA")).read_text()
    queue = _requires(ray_meta, Requirement) + [Requirement(e) for e in extra]
    wheels = _wheels(whl, canonicalize_name)
    present, install, seen = [], {}, set()
    while queue:
        req = queue.pop(0)
        key = canonicalize_name(req.name)
        if key in seen:
            continue
        seen.add(key)
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            have = None
        if have is not None and req.specifier.contains(have, prereleases=True):
            present.append(f"{req.name} {have}")
            continue
        if key not in wheels:
            raise SystemExit(f"ray deps: {req} is needed ({'found ' + have if have else 'not installed'} here) "
                             "and the bundle has no wheel of it: add it to DEPS in ray_bundle.sh")
        version, path = wheels[key]
        if not req.specifier.contains(version, prereleases=True):
            raise SystemExit(f"ray deps: {req} is needed and the bundle's wheel is {version}: update DEPS in ray_bundle.sh")
        install[key] = path
        queue.extend(_requires(_wheel_meta(path), Requirement))
    return present, list(install.values())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__)
        return 2
    bundle, target = Path(argv[0]), Path(argv[1])
    present, wheels = resolve(bundle, argv[2:])
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--disable-pip-version-check", "--target", str(target),
                        *map(str, wheels)], check=True)
    names = " ".join(p.name.split("-")[0] + " " + p.name.split("-")[1] for p in wheels) or "nothing"
    print(f"ray deps: already here: {', '.join(present) or 'none'}; installed into {target}: {names}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
