"""Installing io.isthmus:isthmus (jar, pom, sources, javadoc) from this installed package into a
local Maven repository (``isthmus maven-install``, :mod:`isthmus.cli.java`), so that a Java
project's ``pom.xml`` resolves the dependency with no checkout of isthmus and no network.

The files are written in the repository's layout, as ``mvn install:install-file`` would write
them, without Maven or a plugin to download. The repository is ``--repo``, else
``-Dmaven.repo.local`` in ``MAVEN_OPTS``, else ``<localRepository>`` of ``~/.m2/settings.xml``,
else ``~/.m2/repository`` (Maven's own order).
"""
from __future__ import annotations

import os
import re
import shlex
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from isthmus import knobs
from isthmus._version import __version__
from isthmus.errors import BackendUnavailableError

from . import jvm

GROUP, ARTIFACT = "io.isthmus", "isthmus"
JPYPE_ARTIFACT = "jpype-support"  # org.jpype.jar of the installed JPype (not on Maven Central), by JPype's version
SUFFIXES = (".jar", ".pom", "-sources.jar", "-javadoc.jar")


def local_repository(explicit: str | os.PathLike | None = None) -> Path:
    """The local Maven repository Maven would use (see the module's docstring for the order)."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    for opt in shlex.split(knobs.maven_opts()):
        if opt.startswith("-Dmaven.repo.local="):
            return Path(opt.split("=", 1)[1]).expanduser().resolve()
    configured = _settings_repository(Path.home() / ".m2" / "settings.xml")
    return configured or Path.home() / ".m2" / "repository"


def _settings_repository(settings: Path) -> Path | None:
    try:
        root = ET.parse(settings).getroot()
    except (OSError, ET.ParseError):
        return None
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] == "localRepository" and (element.text or "").strip():
            text = element.text.strip().replace("${user.home}", str(Path.home()))
            return Path(text).expanduser().resolve()
    return None


def artifact_files() -> dict[str, Path]:
    """The artifact's files shipped in this package: {suffix: path}."""
    files = {suffix: jvm._LIB / f"{ARTIFACT}-{__version__}{suffix}" for suffix in SUFFIXES}
    missing = [p.name for p in files.values() if not p.is_file()]
    if missing:
        raise BackendUnavailableError(
            f"this isthmus has no Java artifact to install ({', '.join(missing)} missing in {jvm._LIB}); the wheel "
            "carries it: install isthmus from a wheel, or in a checkout run `make jar` (mvn install) instead")
    return files


def install(repo: Path) -> list[Path]:
    """Write the artifact into ``repo``, with JPype's support jar as the artifact
    :data:`JPYPE_ARTIFACT` its pom depends on when this environment has JPype (a JVM started by
    its own host needs it on the class path to boot the runtime: :mod:`.hosted`); returns the
    files written."""
    files = artifact_files()
    jpype = _jpype_support()
    written = []
    if jpype is not None:
        jar, version = jpype
        pom = (f'<?xml version="1.0" encoding="UTF-8"?>\n<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
               f"  <modelVersion>4.0.0</modelVersion>\n  <groupId>{GROUP}</groupId>\n"
               f"  <artifactId>{JPYPE_ARTIFACT}</artifactId>\n  <version>{version}</version>\n"
               f"  <description>org.jpype.jar of JPype {version}, installed by isthmus maven-install</description>\n"
               "</project>\n")
        written += _install_files(repo, JPYPE_ARTIFACT, version, {".jar": jar.read_bytes(), ".pom": pom.encode()})
    data = {suffix: src.read_bytes() for suffix, src in files.items()}
    if jpype is not None:
        data[".pom"] = with_jpype_dependency(data[".pom"].decode(), jpype[1]).encode()
    written += _install_files(repo, ARTIFACT, __version__, data)
    return written


def _jpype_support() -> tuple[Path, str] | None:
    from . import hosted

    try:
        return hosted.jpype_jar(), hosted.jpype_version()
    except BackendUnavailableError:
        return None


def with_jpype_dependency(pom: str, version: str) -> str:
    """The isthmus pom with a runtime dependency on JPype's support jar (:data:`JPYPE_ARTIFACT`)."""
    dependency = (f"    <dependency>\n      <groupId>{GROUP}</groupId>\n      <artifactId>{JPYPE_ARTIFACT}</artifactId>\n"
                  f"      <version>{version}</version>\n      <scope>runtime</scope>\n    </dependency>\n")
    if "<dependencies>" in pom:
        return pom.replace("<dependencies>\n", "<dependencies>\n" + dependency, 1)
    return pom.replace("</project>", f"  <dependencies>\n{dependency}  </dependencies>\n</project>", 1)


def _install_files(repo: Path, artifact: str, version: str, data: dict[str, bytes]) -> list[Path]:
    folder = repo.joinpath(*GROUP.split("."), artifact, version)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, content in data.items():
        dest = folder / f"{artifact}-{version}{suffix}"
        _write_atomic(dest, content)
        written.append(dest)
    metadata = folder.parent / "maven-metadata-local.xml"
    _write_atomic(metadata, _metadata(metadata, artifact, version).encode())
    return written


def _metadata(existing: Path, artifact: str, version: str) -> str:
    """maven-metadata-local.xml listing ``version`` besides the versions already installed."""
    versions = set(re.findall(r"<version>([^<]+)</version>", existing.read_text())) if existing.is_file() else set()
    versions.add(version)
    listed = "".join(f"      <version>{v}</version>\n" for v in sorted(versions))
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<metadata>\n  <groupId>{GROUP}</groupId>\n'
            f"  <artifactId>{artifact}</artifactId>\n  <versioning>\n    <release>{version}</release>\n"
            f"    <versions>\n{listed}    </versions>\n"
            f"    <lastUpdated>{time.strftime('%Y%m%d%H%M%S', time.gmtime())}</lastUpdated>\n"
            "  </versioning>\n</metadata>\n")


def _write_atomic(dest: Path, data: bytes) -> None:
    # a concurrent Maven build never reads a half-written jar
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
