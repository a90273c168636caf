package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Which paths copy on the host: direct buffers are viewed in place, Java arrays copied once. */
class HostMemoryTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @Test
    void directBuffersAreViewedInPlace() {
        ByteBuffer direct = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        long a1 = CrossLang.hostAddress(direct);
        long a2 = CrossLang.hostAddress(direct);
        assertEquals(a1, a2); // NumPy sees the ByteBuffer's own memory both times
        direct.position(16);
        assertEquals(a1 + 16, CrossLang.hostAddress(direct));
        ByteBuffer pinned = Isthmus.get().device().allocateHost(DType.FLOAT32, 16);
        assertEquals(CrossLang.hostAddress(pinned), CrossLang.hostAddress(pinned));
    }

    @Test
    void javaArraysAreCopiedSoLaterWritesDoNotLeak() {
        Device dev = Isthmus.get().device();
        float[] data = {1, 2, 3};
        try (DeviceBuffer b = dev.fromArray(data)) {
            data[0] = 99;
            assertArrayEquals(new float[] {1, 2, 3}, b.toFloatArray());
            float[] out = b.toFloatArray();
            assertNotEquals(System.identityHashCode(out), System.identityHashCode(b.toFloatArray()));
        }
    }
}
