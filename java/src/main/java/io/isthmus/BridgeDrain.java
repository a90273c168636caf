package io.isthmus;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Where the JDK kept the shutdown hooks unordered (no {@code --add-opens java.base/java.lang}), holds
 * the bridge's hook at the one point between "no new call from Java into Python" and "the bridge is
 * stopped" until no thread is inside a call any longer (issue 26 item 1, its last race).
 *
 * <p>The bridge's hook (JPype's {@code JPypeContext.shutdown}), once the runtime's step inside it has
 * ended, sets its shutdown flag (a call from Java checks it first and is refused with a
 * RuntimeException), then interrupts every other live non-daemon thread, then marks the bridge
 * stopped. A thread that had passed the flag check before the flag was set and still waits for the
 * Python interpreter fails inside the bridge once it is marked stopped, and the bridge cannot convert
 * that failure: SIGSEGV. Where the hooks are ordered the runtime's step never returns into that hook
 * (see {@link ShutdownOrder}); unordered, it must return (the application's hooks may still be
 * running, and the JVM waits for every hook). This thread, started by the runtime's step, is one of
 * those the bridge's hook interrupts, so its {@link #interrupt()} runs in that hook after the flag
 * and before the bridge is marked stopped: it waits there until no other thread has a frame of the
 * bridge's proxy class on its stack (a call that passed the check meets the runtime's closed gate
 * and returns with a typed refusal), at most {@code timeoutMillis}. Every call from then on is
 * refused by the flag, before it enters the bridge.
 */
final class BridgeDrain extends Thread {
    /** The bridge's proxy class: every call from Java into Python runs inside its {@code invoke}. */
    static final String PROXY_CLASS = "org.jpype.proxy.JPypeProxy";

    private final long timeoutMillis;
    private final String proxyClass;
    private final CountDownLatch released = new CountDownLatch(1);

    BridgeDrain(long timeoutMillis, String proxyClass) {
        super("isthmus-bridge-drain");
        setDaemon(false);  // the bridge's hook interrupts non-daemon threads only
        this.timeoutMillis = timeoutMillis;
        this.proxyClass = proxyClass;
    }

    /** Waits for the bridge's hook to interrupt it (bounded: the JVM halts once the hooks are done). */
    @Override
    public void run() {
        try {
            released.await(Math.max(timeoutMillis, 1) * 6, TimeUnit.MILLISECONDS);
        } catch (InterruptedException ignored) {
            // released
        }
    }

    /**
     * From another thread (the bridge's hook): returns once no other thread is inside a call through
     * the bridge, or after the time limit; then ends this thread.
     */
    @Override
    public void interrupt() {
        if (Thread.currentThread() != this) {
            awaitNoCallInside();
        }
        released.countDown();
        super.interrupt();
    }

    /** @return how many threads other than the caller are inside a call through the bridge now */
    int callsInside() {
        Thread me = Thread.currentThread();
        int n = 0;
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            if (e.getKey() != me && e.getKey() != this && inside(e.getValue())) {
                n++;
            }
        }
        return n;
    }

    private boolean inside(StackTraceElement[] frames) {
        for (StackTraceElement f : frames) {
            if (proxyClass.equals(f.getClassName())) {
                return true;
            }
        }
        return false;
    }

    private void awaitNoCallInside() {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (callsInside() > 0 && System.nanoTime() < deadline) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException ignored) {
                // the bridge's hook is not interrupted by anyone; go on waiting
            }
        }
    }
}
