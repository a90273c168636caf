"""The runtime booted inside a JVM that its own host started: ``java -jar``, a build tool's test
JVM, a Spring Boot launcher, a Spark executor (JDK 22+).

There ``io.isthmus.Isthmus.get()`` finds no runtime attached and boots one in the same process
(``io.isthmus.InProcess``): it asks the Python environment that holds isthmus, once, for what an
embedding needs (:func:`describe`, cached by the Java side), loads its libpython through the
Foreign Function & Memory API, initialises it and runs :func:`boot`. That starts JPype on a
Python thread with ``jvmpath`` set to a native stand-in (``native/standin.c``) whose
``JNI_CreateJavaVM`` returns the JVM that already runs, and then attaches the runtime exactly as
``isthmus.java.start()`` does. A Python thread, because a JVM thread inside a native downcall
resolves JNI class lookups with the JDK's own class loader, where JPype's support classes are not.

Which Python: ``-Disthmus.python=PATH`` or ``ISTHMUS_PYTHON`` (read by the Java side), else the
interpreter recorded by ``isthmus jvm-home`` or ``isthmus maven-install`` (:func:`record`).

The stand-in is compiled once per machine into the cache folder with the system C compiler
(:func:`standin`): the wheel stays one pure-Python wheel for every platform, an editable
install and a wheel behave the same, and the library is 60 lines of C against libc alone (no JDK
headers, so a JRE is enough). ``isthmus jvm-home`` and ``isthmus maven-install`` compile it
ahead of time, so an image built with a compiler runs without one.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import zipfile
from contextlib import suppress
from pathlib import Path

from isthmus import knobs
from isthmus._version import __version__
from isthmus.errors import BackendUnavailableError

RECORD = Path("~/.isthmus/python")  # the interpreter path `isthmus jvm-home` / `maven-install` recorded
_SOURCE = Path(__file__).resolve().parent / "native" / "standin.c"
# a class of JPype's support jar, compared at boot with the one on the application's class path
JPYPE_PROBE = "org/jpype/JPypeContext.class"
_HIDDEN = "META-INF/versions/0/"


def record(python: str | None = None) -> Path:
    """Write the interpreter a JVM booting the runtime by itself uses when neither
    ``-Disthmus.python`` nor ``ISTHMUS_PYTHON`` names one; returns the record's path."""
    path = RECORD.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{python or sys.executable}\n")
    return path


def libpython() -> Path:
    """This interpreter's shared libpython (as pemja's ``find_libpython`` looks for it)."""
    cfg = sysconfig.get_config_var
    names = [cfg("INSTSONAME"), cfg("LDLIBRARY"),
             f"libpython{cfg('LDVERSION') or cfg('VERSION')}.so", f"libpython{cfg('LDVERSION') or cfg('VERSION')}.dylib"]
    folders = [cfg("LIBDIR"), os.path.join(sys.base_prefix, "lib"), cfg("PYTHONFRAMEWORKPREFIX")]
    for folder in filter(None, folders):
        for name in filter(None, names):
            path = Path(folder, name)
            if path.is_file() and not path.name.endswith(".a"):
                return path.resolve()
    raise BackendUnavailableError(
        f"the Python at {sys.executable} ({platform.python_version()}) has no shared libpython "
        f"(Py_ENABLE_SHARED={cfg('Py_ENABLE_SHARED')}, nothing like {names[1] or 'libpython*.so'} in "
        f"{cfg('LIBDIR')}), so a JVM cannot load it: use a Python built with --enable-shared (distribution "
        "packages, pyenv with PYTHON_CONFIGURE_OPTS=--enable-shared, conda, python.org builds) for the "
        "environment named by -Disthmus.python / ISTHMUS_PYTHON, or run the application with `isthmus java`")


def _suffix() -> str:
    return ".dylib" if sys.platform == "darwin" else ".so"


def standin() -> Path:
    """The native stand-in for libjvm, compiled once into the cache folder (by source and machine)."""
    source = _SOURCE.read_bytes()
    digest = hashlib.sha256(source + platform.machine().encode() + sys.platform.encode()).hexdigest()[:16]
    folder = knobs.cache_dir() / "hosted"
    out = folder / f"isthmus-jvm-standin-{digest}{_suffix()}"
    if out.is_file():
        return out
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise BackendUnavailableError(
            f"booting isthmus inside a JVM needs a small native library compiled once with a C compiler, and none "
            f"(cc, gcc, clang) is on PATH: install one (Debian/Ubuntu: apt-get install gcc), or run `isthmus "
            f"maven-install` once where one is and keep {folder}, or run the application with `isthmus java`")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".standin-", suffix=_suffix())
    os.close(fd)
    try:
        flags = ["-dynamiclib"] if sys.platform == "darwin" else ["-shared", "-fPIC"]
        done = subprocess.run([cc, *flags, "-O2", "-o", tmp, str(_SOURCE), "-ldl"], capture_output=True, text=True)
        if done.returncode != 0:
            raise BackendUnavailableError(f"compiling {_SOURCE} with {cc} failed (exit {done.returncode}): "
                                          f"{(done.stderr or done.stdout).strip()[-2000:]}")
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return out


def jpype_jar() -> Path:
    """JPype's Java support library (``org.jpype.jar``), shipped in the jpype1 wheel."""
    try:
        import jpype
    except ImportError:
        raise BackendUnavailableError(
            f"JPype is not installed in the Python at {sys.executable}; install it there "
            "(pip install jpype1, or the extra isthmus[java])") from None
    jar = Path(jpype.__file__).resolve().parent.parent / "org.jpype.jar"
    if not jar.is_file():
        raise BackendUnavailableError(f"JPype {jpype.__version__} has no org.jpype.jar at {jar}; reinstall jpype1")
    return jar


def jpype_version() -> str:
    import jpype

    return str(jpype.__version__)


def jpype_probe_digest(jar: Path) -> str:
    """SHA-256 of :data:`JPYPE_PROBE` in ``jar``: which JPype's classes those are."""
    with zipfile.ZipFile(jar) as z:
        return hashlib.sha256(z.read(JPYPE_PROBE)).hexdigest()


def _site_folders() -> list[str]:
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        folders.append(site.getusersitepackages())
    return folders


def describe() -> list[tuple[str, str]]:
    """What a JVM needs to boot this environment in process, as (key, value) lines; ``path`` and
    ``site`` repeat, in order. Compiles the stand-in if needed."""
    jar = jpype_jar()
    lines = [("python", sys.executable), ("version", platform.python_version()), ("isthmus", __version__),
             ("libpython", str(libpython())), ("home", sys.base_prefix), ("exec_home", sys.base_exec_prefix),
             ("prefix", sys.prefix), ("standin", str(standin())), ("standin_source", str(_SOURCE)),
             ("jpype", jpype_version()),
             ("jpype_jar", str(jar)), ("jpype_sha256", jpype_probe_digest(jar))]
    lines += [("path", p) for p in sys.path if p and os.path.exists(p)]
    lines += [("site", p) for p in _site_folders()]
    return lines


def prepare() -> None:
    """Check and cache what a JVM booting the runtime by itself will ask for (``isthmus jvm-home``
    and ``maven-install`` call it): a Python without a shared libpython or JPype fails here, early."""
    describe()


def define_support_classes(standin_path: str, jar: str) -> None:
    """Define JPype's Java classes (``org.jpype`` in ``jar``) in the JVM's system class loader, through
    the stand-in's ``isthmus_define_system_classes`` (JNI DefineClass): for an application whose class
    path lacks org.jpype.jar because its host nests jars (Spring Boot), where JPype's native start,
    which searches the system class loader, would not find them."""
    import ctypes

    with zipfile.ZipFile(jar) as z:
        # META-INF/versions/0/org/jpype: classes JPype's own loader defines from its jar (Reflector0)
        # (a class in both places: the class path's copy, the top-level one, is what a flat class path gives)
        found: dict[str, bytes] = {}
        for n in sorted(z.namelist(), key=lambda n: n.startswith(_HIDDEN)):
            if n.startswith(("org/jpype/", _HIDDEN + "org/jpype/")) and n.endswith(".class"):
                found.setdefault(n[:-len(".class")].removeprefix(_HIDDEN), z.read(n))
        entries = list(found.items())
    lib = ctypes.CDLL(standin_path)
    fn = lib.isthmus_define_system_classes
    fn.restype = ctypes.c_int
    count = len(entries)
    names = (ctypes.c_char_p * count)(*[n.encode() for n, _ in entries])
    blobs = [ctypes.create_string_buffer(b, len(b)) for _, b in entries]
    data = (ctypes.c_void_p * count)(*[ctypes.addressof(b) for b in blobs])
    lengths = (ctypes.c_int * count)(*[len(b) for _, b in entries])
    left = fn(count, names, data, lengths)
    if left != 0:
        raise BackendUnavailableError(
            f"could not define JPype's classes from {jar} in this JVM's system class loader ({left} of {count} "
            "left undefined); put org.jpype.jar on the JVM's class path (-cp), or run the application with "
            "`isthmus java`")


def boot(standin_path: str, define_from: str = "", caller_loader: bool = False) -> None:
    """Run inside the JVM's process by the Java bootstrap, with the GIL held: start JPype on a
    Python thread against the running JVM and attach the runtime (see the module's docstring).

    ``define_from``: JPype's support jar, whose classes the system class loader lacks (they are
    defined there first, :func:`define_support_classes`). ``caller_loader``: io.isthmus was loaded by a
    class loader of the application's host (a nested jar, Spark's --jars), the calling Java thread's
    context class loader: Python then finds io.isthmus and the application's classes through it, so
    both sides share one io.isthmus. That loader is read on the calling thread, which the JVM knows."""
    import jpype

    from . import jvm

    failures: list[BaseException] = []
    started, go = threading.Event(), threading.Event()
    box: dict = {}

    def run() -> None:
        try:
            if define_from:
                define_support_classes(standin_path, define_from)
            jvm.join_host_jvm(standin_path)
            started.set()
            go.wait()
            if "error" in box:
                return
            jvm.attach_in_host(box.get("loader"))
        except BaseException as exc:  # noqa: BLE001 - raised on the bootstrap's thread below
            failures.append(exc)
        finally:
            started.set()
            with suppress(Exception):
                if jpype.isJVMStarted():
                    jpype.JClass("java.lang.Thread").detach()  # this thread ends; the JVM keeps no record of it

    thread = threading.Thread(target=run, name="isthmus-boot")
    thread.start()
    started.wait()
    try:
        if caller_loader and not failures:
            box["loader"] = jpype.JClass("java.lang.Thread").currentThread().getContextClassLoader()
    except BaseException as exc:  # noqa: BLE001
        box["error"] = exc
        failures.append(exc)
    finally:
        go.set()
    thread.join()
    if failures:
        raise failures[0]


def main(argv: list[str]) -> int:
    """``python -m isthmus.java.hosted describe``: the description on stdout, one ``key=value`` a line;
    a failure is one ``error=Type: message`` line and exit 2."""
    if argv != ["describe"]:
        print("usage: python -m isthmus.java.hosted describe", file=sys.stderr)
        return 2
    try:
        lines = describe()
    except BackendUnavailableError as exc:
        print(f"error={type(exc).__name__}: {' '.join(str(exc).split())}")
        return 2
    for key, value in lines:
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
