"""Hosting the JVM: find the classpath, start once, attach the runtime, shut down at exit.

Rules (../shared/DESIGN.md, measured): the JVM starts once, lazily, with the whole classpath
(a jar added later is invisible to ``Class.forName``/``ServiceLoader``) and cannot be
restarted; it is shut down explicitly at interpreter exit after the runtime's Java threads
have stopped (a live non-daemon thread would hang the exit).

A shutdown the JVM starts itself (SIGTERM, SIGINT, SIGHUP, ``System.exit``) runs in this order
(:func:`_install_exit_hook`): the application's Java shutdown hooks, with the runtime usable;
then, in JPype's own hook, the runtime's step: calls from Java into Python stop (a thread making
one parks; the JVM halts next) and those under way finish, Python's exit handlers run, and
JPype is told to leave its native tables alone; then the JVM halts with its status (143, 130,
129, or ``System.exit``'s) while the runtime's step still holds JPype's hook, so JPype never
closes the bridge under the application's threads. JPype's hook used to run among the
application's, closing the bridge under threads still inside a call: SIGSEGV in ``_jpype.so``;
and where it ran last but was let finish, a thread that the OS had not run during the step met
the closed bridge: JPype's RuntimeException in that thread, or SIGSEGV when its call had already
entered the bridge. Without ``--add-opens java.base/java.lang`` the hooks stay unordered and
JPype's hook finishes as before (late calls are refused), held after its refusal flag until no call
is inside the bridge (io.isthmus.BridgeDrain), so none meets the stopped bridge.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import zipfile
from contextlib import suppress
from pathlib import Path

from isthmus import knobs
from isthmus._version import __version__
from isthmus.buffer import Buffer
from isthmus.errors import BackendUnavailableError, InvalidArgumentError

_LIB = Path(__file__).resolve().parent / "lib"  # in the package: the wheel build (or `make jar`) puts the jar here
_MARKER = "io/isthmus/Isthmus.class"

_lock = threading.Lock()
_runtime = None  # spi.runtime.Runtime once attached
_classpath: list[str] = []
_exit_hook = None  # the JVM shutdown hook that runs Python's exit handlers on System.exit
_exiting = threading.Event()  # set once the JVM has started to shut down by itself
_exit_thread: int | None = None  # the thread running that shutdown's Python part
# java.lang opened to the classpath: what io.isthmus.Interop.orderShutdown needs (see start)
_OPEN_JAVA_LANG = "--add-opens=java.base/java.lang=ALL-UNNAMED"
# JPype loads its native library with System.load from org.jpype (the class path's unnamed module): a restricted
# method, which JDK 24+ reports with four WARNING lines on stderr unless native access is granted; every JDK
# from 17 accepts the option
_NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED"
# How long a JVM shutdown waits for calls from Java into Python that are under way.
DRAIN_SECONDS = 10.0
_after_application_hooks = False  # whether JPype's hook, and so the runtime's step, runs after the application's


def packaged_jar() -> Path | None:
    """The io.isthmus jar installed with this package (this version's when there are several), or None."""
    own = _LIB / f"isthmus-{__version__}.jar"
    if own.is_file():
        return own
    jars = sorted(p for p in _LIB.glob("isthmus-*.jar") if not p.name.endswith(("-sources.jar", "-javadoc.jar")))
    return jars[-1] if jars else None


def _holds_isthmus(entry: str) -> bool:
    path = Path(entry)
    if path.is_dir():
        return (path / _MARKER).is_file()
    try:
        with zipfile.ZipFile(path) as z:
            return _MARKER in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def isthmus_classpath(given=()) -> list[str]:
    """Where the io.isthmus classes come from: the jar installed with the package, else nothing
    extra when one of the ``given`` classpath entries (``-cp``, ``ISTHMUS_CLASSPATH``) holds them."""
    jar = packaged_jar()
    if jar is not None:
        return [str(jar)]
    if any(_holds_isthmus(str(e)) for e in given):
        return []
    raise BackendUnavailableError(
        f"the isthmus Java classes are missing: no isthmus-*.jar in {_LIB} and no classpath entry holds "
        f"{_MARKER}; install isthmus from its wheel (which carries the jar), run `make jar` in a checkout, "
        "or pass the jar with -cp / ISTHMUS_CLASSPATH")


def classpath(extra=None) -> list[str]:
    """The JVM's classpath: isthmus itself, ``ISTHMUS_CLASSPATH``, then ``extra``."""
    if isinstance(extra, str):
        extra = extra.split(os.pathsep)
    given = [str(e) for e in [*knobs.classpath(), *(extra or ())] if str(e)]
    return list(dict.fromkeys([*isthmus_classpath(given), *given]))  # each entry once, in order


def started() -> bool:
    return _runtime is not None


def start(classpath_entries=None, jvm_args=()) -> None:
    """Start the JVM (once) and attach the runtime; later calls with no new classpath return at once."""
    import jpype

    with _lock:
        wanted = classpath(classpath_entries)
        if _runtime is not None:
            missing = [e for e in wanted if e not in _classpath]
            if missing:
                raise InvalidArgumentError(
                    f"the JVM is already running and its classpath cannot change; missing {missing}. "
                    "Pass every jar to the first isthmus.java.start() (or set ISTHMUS_CLASSPATH)")
            return
        if jpype.isJVMStarted():
            raise BackendUnavailableError("a JVM was started outside isthmus.java.start(); isthmus must start it "
                                          "(with its own classpath) to attach the runtime")
        jpype.startJVM(_OPEN_JAVA_LANG, _NATIVE_ACCESS, *jvm_args,
                       jvmpath=knobs.jvm_path() or jpype.getDefaultJVMPath(), classpath=wanted, convertStrings=False)
        # a JVM whose runtime Python started: io.isthmus never boots a second one into it (InProcess)
        jpype.JClass("java.lang.System").setProperty("isthmus.host", "python")
        _attach(wanted)
        atexit.register(shutdown)


def _attach(classpath_entries: list[str]) -> None:
    """Attach the runtime to the JVM JPype has just started (or joined), with the exit hook."""
    global _runtime, _classpath, _after_application_hooks
    import jpype

    from .spi.proxy import mirror_java_errors
    from .spi.runtime import Runtime

    mirror_java_errors()
    _register_conversion()
    runtime = Runtime()
    interop = jpype.JClass("io.isthmus.Interop")
    interop.attach(runtime)
    _runtime, _classpath = runtime, classpath_entries
    _after_application_hooks = bool(interop.orderShutdown())  # JPype's hook last (see ShutdownOrder)
    _install_exit_hook()


def join_host_jvm(standin: str) -> None:
    """Start JPype against the JVM that its own host started and that runs this embedded Python
    (io.isthmus.InProcess, :mod:`.hosted`), through the native stand-in ``standin`` for libjvm. Call
    on a Python thread the JVM has not seen, then :func:`attach_in_host`. The process ends when the JVM
    exits: its exit hook runs Python's exit handlers then, and nothing here shuts the JVM down."""
    import jpype

    with _lock:
        if _runtime is not None:
            return
        if jpype.isJVMStarted():
            raise BackendUnavailableError("JPype already runs in this embedded Python; the runtime cannot join the JVM")
        # interrupt=True: JPype leaves the JVM's SIGINT and SIGTERM handling alone (shutdown hooks, exit 130 and
        # 143); False would route both signals into this Python as KeyboardInterrupts
        jpype.startJVM(jvmpath=standin, classpath=[], convertStrings=False, interrupt=True)


def attach_in_host(loader=None) -> None:
    """Attach the runtime to the JVM :func:`join_host_jvm` joined. ``loader``: the class loader io.isthmus
    came from when it is not the system class loader (a nested jar, Spark's --jars): Python looks Java
    classes up through it (:func:`_look_up_through`), so it shares the application's io.isthmus."""
    with _lock:
        if _runtime is not None:
            return
        if loader is not None:
            _look_up_through(loader)
        _attach([])


def _look_up_through(loader) -> None:
    """Make JPype find classes by name through ``loader`` first (which asks the system class loader
    first, as every Java class loader does), then as JPype does: ``jpype.JClass(name)``, the
    interfaces of ``jpype.JImplements`` and the rest go through ``_jpype._getClass``."""
    import _jpype
    import jpype

    original = _jpype._getClass  # noqa: SLF001
    for_name = jpype.JClass("java.lang.Class").forName
    platform = ("java.", "javax.", "jdk.", "sun.", "org.jpype.", "[")

    def get_class(name):
        if isinstance(name, str) and not name.startswith(platform):
            try:
                return original(for_name(name, True, loader))
            except jpype.JException:
                pass  # ClassNotFoundException (or a linkage error): JPype's own lookup says what is wrong
        return original(name)

    _jpype._getClass = get_class  # noqa: SLF001


def exiting() -> bool:
    """Whether the JVM is shutting down by itself (a signal or ``System.exit``): it ends the process."""
    return _exiting.is_set()


def wait_for_exit() -> None:
    """Block until the shutting-down JVM ends the process (with its own exit status); no-op on the
    thread that runs the shutdown (it runs Python's exit handlers, this one among them)."""
    if threading.get_ident() == _exit_thread:
        return
    _exiting.wait()
    threading.Event().wait()


def _install_exit_hook() -> None:
    """The runtime's step of a shutdown the JVM starts by itself (a signal, ``System.exit``, which
    end the process without Python's exit handlers), in any program that hosts the JVM through
    isthmus, not only ``isthmus java``. Registered through JPype, it runs inside JPype's own hook,
    before JPype closes the bridge, and after the application's hooks (Interop.orderShutdown):

    1. calls from Java into Python stop: a thread making one parks for good (the JVM halts next,
       as it stops every thread), and the calls under way finish (up to :data:`DRAIN_SECONDS`);
       where the JDK kept the hooks unordered (no ``--add-opens``), a late call is refused with
       an IsthmusError instead, since it may come from an application hook the JVM waits for;
    2. Python's exit handlers run and the streams are flushed;
    3. JPype leaves its native tables in place (freeing them is pointless when the process ends,
       and fatal to a thread that still touches them);
    4. where the hooks are ordered, the JVM halts right away (Interop.shutdownStepDone) and this
       hook never returns into JPype's: JPype's hook would then refuse every later call from Java
       (RuntimeException "Proxy called during shutdown" in an application thread the OS did not
       run during steps 1-3) and mark the bridge stopped under a call already entering it, whose
       failure JPype cannot convert (SIGSEGV, "Fatal error in exception handling"). A late call
       parks in the gate until the halt, as in step 1. Where the hooks are unordered this hook
       returns, and Interop.drainBridgeAtShutdown holds JPype's hook after its refusal flag and
       before it stops the bridge until no call is inside (io.isthmus.BridgeDrain).

    :func:`shutdown` removes the hook first, so an exit that Python starts runs its handlers once.
    (A SecurityManager could intercept System.exit instead, but it is deprecated for removal.)"""
    global _exit_hook
    import jpype

    from .spi import proxy

    @jpype.JImplements("java.lang.Runnable")
    class ExitHook:
        @jpype.JOverride
        def run(self):
            global _exit_thread
            _exit_thread = threading.get_ident()
            _exiting.set()
            # first in line: a Python main thread that ends from now on leaves the exit status to the JVM
            atexit.register(wait_for_exit)
            settled = False  # whether no call was left inside the gate's wait
            try:
                settled = proxy.close(DRAIN_SECONDS, park=_after_application_hooks)
                atexit.unregister(shutdown)  # the JVM is exiting by itself: nothing left to shut down
                atexit.unregister(jpype._core._JTerminate)  # noqa: SLF001 - same reason
                atexit._run_exitfuncs()  # noqa: SLF001 - (it also clears the handlers: wait_for_exit again)
                atexit.register(wait_for_exit)
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with suppress(Exception):  # a closed stream must not block the exit
                        stream.flush()
                jpype.JClass("org.jpype.JPypeContext").freeResources = False
                if _after_application_hooks:
                    # 4. the JVM halts now, with its status, and this hook stays here: past it, JPype's own
                    # hook would refuse every later call from Java (a RuntimeException in the application's
                    # threads) and mark the bridge stopped under any call already entering it (SIGSEGV)
                    jpype.JClass("io.isthmus.Interop").shutdownStepDone()
                    threading.Event().wait()
                else:
                    # 4'. unordered: this hook returns into JPype's, which refuses new calls, then interrupts
                    # the live non-daemon threads, then marks the bridge stopped. A call that passed its
                    # refusal check before it and waits for this interpreter would fail inside the stopped
                    # bridge (SIGSEGV): the drain thread's interrupt(), run by JPype's hook between the two,
                    # waits until no thread is inside a call (each meets the closed gate: a typed refusal)
                    # (a call still inside after the gate's own wait is stuck: the exit waits 1 s more, not 10)
                    limit = DRAIN_SECONDS if settled else 1.0
                    jpype.JClass("io.isthmus.Interop").drainBridgeAtShutdown(int(limit * 1000))

    _exit_hook = jpype.JClass("java.lang.Thread")(ExitHook(), "isthmus-exit")
    jpype.JClass("java.lang.Runtime").getRuntime().addShutdownHook(_exit_hook)


def _remove_exit_hook() -> None:
    global _exit_hook
    import jpype

    hook, _exit_hook = _exit_hook, None
    if hook is not None:
        with suppress(jpype.JException):  # IllegalStateException: the JVM is already exiting
            jpype.JClass("java.lang.Runtime").getRuntime().removeShutdownHook(hook)


def _register_conversion() -> None:
    """A Python Buffer passed where Java expects an io.isthmus.DeviceBuffer converts implicitly."""
    import jpype

    @jpype.JConversion("io.isthmus.DeviceBuffer", instanceof=Buffer)
    def _buffer_to_java(jcls, buffer):  # noqa: ANN001 - JPype's conversion signature
        return to_java(buffer)


def runtime():
    if _runtime is None:
        raise BackendUnavailableError("the JVM is not started: call isthmus.java.start() first")
    return _runtime


def to_java(buffer: Buffer):
    """The ``io.isthmus.DeviceBuffer`` for a Python Buffer: a new Java handle on the same
    allocation (same pointer, no copy). Closing it in Java leaves the Python Buffer open."""
    import jpype

    from .spi.buffers import BufferHandle

    runtime()
    if not isinstance(buffer, Buffer):
        raise InvalidArgumentError(f"to_java needs an isthmus.Buffer, got {type(buffer).__name__}")
    buffer._check()
    return jpype.JClass("io.isthmus.Interop").wrap(BufferHandle(buffer, owned=False))


def from_java(device_buffer) -> Buffer:
    """The Python Buffer behind an ``io.isthmus.DeviceBuffer`` (the same object, no copy).
    Python now holds it too: closing the Java handle no longer frees it."""
    import jpype

    from .spi.buffers import BufferHandle

    runtime()
    if not isinstance(device_buffer, jpype.JClass("io.isthmus.DeviceBuffer")):
        raise InvalidArgumentError(f"from_java needs an io.isthmus.DeviceBuffer, got {type(device_buffer).__name__}")
    handle = jpype.JClass("io.isthmus.Interop").handle(device_buffer)
    if not isinstance(handle, BufferHandle):
        raise InvalidArgumentError("this DeviceBuffer is not backed by the isthmus Python runtime")
    handle.owned = False
    return handle._live()


def shutdown() -> None:
    """Stop the runtime's Java threads, detach, and shut the JVM down (main thread only; the
    JVM cannot be started again in this process)."""
    global _runtime
    import jpype

    if _runtime is None or not jpype.isJVMStarted():
        return
    jpype.JClass("io.isthmus.Interop").detach(5000)
    _runtime._join_threads(5.0)
    if threading.current_thread() is threading.main_thread():
        _runtime = None
        _remove_exit_hook()
        jpype.shutdownJVM()
