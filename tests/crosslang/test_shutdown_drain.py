"""io.isthmus.BridgeDrain (issue 26 item 1, the race left where the JVM keeps its shutdown hooks
unordered): JPype's hook, after it refuses new calls from Java and before it marks the bridge stopped,
interrupts every live non-daemon thread; the drain thread's interrupt() holds it there until no thread
is inside a call from Java into Python (a call that passed JPype's check would otherwise fail inside the
stopped bridge: SIGSEGV). Here its interrupt() is called directly while a Java thread is inside such a
call (a Python Runnable sleeping), as JPype's hook calls it. The whole unordered exit, Java threads
calling all along: tests/crosslang/test_launcher.py::test_without_java_lang_opened_a_signal_still_exits_cleanly
and tests/java/test_hosted.py::test_signals_run_the_hooks_and_exit_with_javas_status[...-False]."""
from __future__ import annotations

import threading
import time


def _inside_a_call(jvm, seconds: float):
    """A Java thread inside a call into Python for ``seconds``; returns (thread, entered, left events, times)."""
    entered, left, times = threading.Event(), threading.Event(), {}

    @jvm.JImplements("java.lang.Runnable")
    class Slow:
        @jvm.JOverride
        def run(self):
            entered.set()
            time.sleep(seconds)  # the interpreter's lock released: the drain's wait goes on meanwhile
            times["left"] = time.monotonic()
            left.set()

    t = jvm.JClass("java.lang.Thread")(Slow(), "test-inside-a-call")
    t.start()
    assert entered.wait(30)
    return t, left, times


def test_the_drain_holds_the_caller_until_no_call_is_inside(jvm, J):
    t, left, times = _inside_a_call(jvm, 1.0)
    drain = J.Interop.drainBridgeAtShutdown(20_000)
    assert drain.isAlive() and not drain.isDaemon()  # JPype's hook interrupts live non-daemon threads
    drain.interrupt()  # as JPype's hook does, between its refusal flag and stopping the bridge
    returned = time.monotonic()
    assert left.is_set() and returned >= times["left"], "the drain let the hook go on while a call was inside"
    t.join(10_000)
    drain.join(10_000)
    assert not drain.isAlive()


def test_with_no_call_inside_the_drain_lets_the_hook_go_on_at_once(jvm, J):
    drain = J.Interop.drainBridgeAtShutdown(20_000)
    start = time.monotonic()
    drain.interrupt()
    assert time.monotonic() - start < 2.0
    drain.join(10_000)
    assert not drain.isAlive()


def test_the_drain_waits_no_longer_than_its_limit(jvm, J):
    t, left, _ = _inside_a_call(jvm, 3.0)
    drain = J.Interop.drainBridgeAtShutdown(300)
    start = time.monotonic()
    drain.interrupt()
    waited = time.monotonic() - start
    assert 0.29 <= waited < 2.5 and not left.is_set(), waited
    assert left.wait(30)
    t.join(10_000)
