package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.Runtime;

/**
 * Bridge for the runtime provider (the isthmus Python package) and language bindings;
 * applications do not need it. It attaches the runtime, and converts between the public
 * types and the {@link io.isthmus.spi} handles.
 */
public final class Interop {
    private Interop() {
    }

    /**
     * Attaches the runtime that {@link Isthmus#get()} returns.
     *
     * @param runtime the runtime implementation
     */
    public static void attach(Runtime runtime) {
        if (runtime == null) {
            throw new InvalidArgumentException("runtime must not be null; use detach()");
        }
        Isthmus.attach(runtime);
    }

    /**
     * Makes the shutdown hooks registered so far (the bridge's own) run after every hook the
     * application registers, so application hooks can still use the runtime during a JVM
     * shutdown; the runtime calls it once, right after attaching.
     *
     * @return whether the hooks moved (the JVM must open {@code java.lang} to this code)
     */
    public static boolean orderShutdown() {
        return ShutdownOrder.defer();
    }

    /**
     * Says that the runtime's step of a JVM shutdown has ended (calls from Java into Python
     * stopped, Python's exit handlers run): the JVM halts now, with its exit status, without
     * waiting for the bridge's hook that called this, which then stays where it is (see
     * {@link ShutdownOrder}). Only where {@link #orderShutdown()} moved the hooks.
     */
    public static void shutdownStepDone() {
        ShutdownOrder.stepDone();
    }

    /**
     * Where {@link #orderShutdown()} could not move the hooks: starts the thread that holds the
     * bridge's hook, after it stops new calls from Java and before it marks the bridge stopped, until
     * no thread is inside a call through the bridge (at most {@code timeoutMillis}); see
     * {@link BridgeDrain}. Called by the runtime's step of a JVM shutdown, just before it returns.
     *
     * @param timeoutMillis the longest the bridge's hook is held
     * @return the started thread (its {@code interrupt()} is the wait)
     */
    public static Thread drainBridgeAtShutdown(long timeoutMillis) {
        BridgeDrain drain = new BridgeDrain(timeoutMillis, BridgeDrain.PROXY_CLASS);
        drain.start();
        return drain;
    }

    /**
     * Shuts down the runtime's executors (waiting up to {@code timeoutMillis}), releases queued
     * buffers and detaches the runtime; later calls get {@link NotAttachedException}.
     *
     * @param timeoutMillis how long to wait for executor threads to finish
     * @return whether every executor thread finished in time
     */
    public static boolean detach(long timeoutMillis) {
        boolean finished = RuntimeExecutor.shutdownAll(timeoutMillis);
        if (Isthmus.isAttached()) {
            Releases.drain();
        }
        Isthmus.attach(null);
        return finished;
    }

    /**
     * @param handle a buffer handle
     * @return a new {@link DeviceBuffer} owning {@code handle}
     */
    public static DeviceBuffer wrap(BufferHandle handle) {
        return DeviceBuffer.wrap(handle);
    }

    /**
     * @param buffer an open buffer
     * @return the buffer's handle
     * @throws ClosedBufferException if the buffer was closed
     */
    public static BufferHandle handle(DeviceBuffer buffer) {
        return buffer.handle();
    }

    /** @return how many buffers queued by the Cleaner were released now */
    public static int drainReleases() {
        return Releases.drain();
    }
}
