package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Handles are released by close() and, as a backstop, by the Cleaner; nothing leaks. */
class LifetimeTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @Test
    void hundredThousandAllocateCloseCyclesLeakNothing() {
        Isthmus rt = Isthmus.get();
        Device dev = rt.device();
        long before = rt.liveBuffers();
        long bytes = dev.memoryInUse();
        for (int i = 0; i < 100_000; i++) {
            try (DeviceBuffer b = dev.allocate(DType.FLOAT32, 256)) {
                if (i % 25_000 == 0) {
                    assertEquals(before + 1, rt.liveBuffers());
                    assertEquals(bytes + 256 * 4, dev.memoryInUse());
                }
            }
        }
        assertEquals(before, rt.liveBuffers());
        assertEquals(bytes, dev.memoryInUse());
    }

    @Test
    void freePoolKeepsOpenBuffersAndTheirContents() {
        Device dev = Isthmus.get().device();
        float[] data = new float[1000];
        java.util.Random rng = new java.util.Random();
        for (int i = 0; i < data.length; i++) {
            data[i] = rng.nextFloat();
        }
        try (DeviceBuffer keep = dev.allocate(DType.FLOAT32, data.length)) {
            keep.copyFrom(data);
            for (int i = 0; i < 3; i++) {
                dev.allocate(DType.FLOAT32, 4096).close(); // freed: cached for the next allocation
            }
            long bytes = dev.memoryInUse();
            dev.freePool();
            assertEquals(bytes, dev.memoryInUse());
            org.junit.jupiter.api.Assertions.assertArrayEquals(data, keep.toFloatArray());
            try (DeviceBuffer again = dev.allocate(DType.FLOAT32, 4096)) {
                assertEquals(bytes + 4096 * 4, dev.memoryInUse());
            }
        }
    }

    @Test
    void cleanerReleasesBuffersNeverClosed() throws InterruptedException {
        Isthmus rt = Isthmus.get();
        Device dev = rt.device();
        long before = rt.liveBuffers();
        long bytes = dev.memoryInUse();
        for (int i = 0; i < 1000; i++) {
            dev.allocate(DType.UINT8, 64); // dropped without close()
        }
        // (some may already be released: allocate() drains what the Cleaner queued)
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (rt.liveBuffers() > before && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
            Interop.drainReleases();
        }
        assertEquals(before, rt.liveBuffers());
        assertEquals(bytes, dev.memoryInUse());
    }
}
