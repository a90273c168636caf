package io.isthmus;

import io.isthmus.spi.BufferHandle;

import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Handles of buffers that the garbage collector found unreachable before close(). The Cleaner
 * thread only queues them (a call into the runtime from a thread it never saw is slow and
 * must not happen inside GC-driven code); the next allocation or {@link Interop#drainReleases()}
 * releases them.
 */
final class Releases {
    private static final ConcurrentLinkedQueue<BufferHandle> PENDING = new ConcurrentLinkedQueue<>();

    private Releases() {
    }

    static void enqueue(BufferHandle handle) {
        PENDING.add(handle);
    }

    static int drain() {
        int n = 0;
        for (BufferHandle h; (h = PENDING.poll()) != null; n++) {
            h.close();
        }
        return n;
    }
}
