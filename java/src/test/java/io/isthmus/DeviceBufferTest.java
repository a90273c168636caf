package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Buffers: allocation, host transfers both ways, bad input, closing. */
class DeviceBufferTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void arraysRoundTripInEveryJavaType(Device dev) {
        try (DeviceBuffer f = dev.fromArray(new float[] {1.5f, -2, 3, 4, 5, 6}, 2, 3);
             DeviceBuffer d = dev.fromArray(new double[] {Math.PI, -1e300});
             DeviceBuffer i = dev.fromArray(new int[] {Integer.MIN_VALUE, 7, 11});
             DeviceBuffer l = dev.fromArray(new long[] {Long.MAX_VALUE, -3})) {
            assertArrayEquals(new long[] {2, 3}, f.shape());
            assertEquals(DType.FLOAT32, f.dtype());
            assertEquals(24, f.nbytes());
            assertEquals(dev, f.device());
            assertArrayEquals(new float[] {1.5f, -2, 3, 4, 5, 6}, f.toFloatArray());
            assertArrayEquals(new double[] {1.5, -2, 3, 4, 5, 6}, f.toDoubleArray());
            assertArrayEquals(new double[] {Math.PI, -1e300}, d.toDoubleArray());
            assertArrayEquals(new int[] {Integer.MIN_VALUE, 7, 11}, i.toIntArray());
            assertArrayEquals(new long[] {Integer.MIN_VALUE, 7, 11}, i.toLongArray());
            assertArrayEquals(new long[] {Long.MAX_VALUE, -3}, l.toLongArray());
            f.copyFrom(new float[] {0, 1, 2, 3, 4, 5});
            assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5}, f.toFloatArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void directByteBuffersBothWays(Device dev) {
        ByteBuffer src = ByteBuffer.allocateDirect(4 * 8).order(ByteOrder.nativeOrder());
        for (int k = 0; k < 8; k++) {
            src.putFloat(k * 4, k * 0.5f);
        }
        try (DeviceBuffer b = dev.fromBuffer(src, DType.FLOAT32, 2, 4)) {
            assertArrayEquals(new long[] {2, 4}, b.shape());
            ByteBuffer dst = ByteBuffer.allocateDirect(4 * 8 + 8).order(ByteOrder.nativeOrder());
            dst.position(8);
            b.copyTo(dst);
            assertEquals(8, dst.position());
            for (int k = 0; k < 8; k++) {
                assertEquals(k * 0.5f, dst.getFloat(8 + k * 4));
            }
            src.putFloat(0, 42f);
            b.copyFrom(src);
            assertEquals(42f, b.toFloatArray()[0]);
        }
        ByteBuffer host = dev.allocateHost(DType.FLOAT64, 3);
        assertTrue(host.isDirect());
        assertEquals(ByteOrder.nativeOrder(), host.order());
        assertEquals(24, host.capacity());
        host.putDouble(0, 1).putDouble(8, 2).putDouble(16, 3);
        try (DeviceBuffer b = dev.fromBuffer(host, DType.FLOAT64)) {
            assertArrayEquals(new double[] {1, 2, 3}, b.toDoubleArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badInputGetsTheRightException(Device dev) {
        assertThrows(InvalidArgumentException.class, () -> dev.allocate(DType.FLOAT32, -1));
        assertThrows(InvalidArgumentException.class, () -> dev.allocate(null, 3));
        assertThrows(InvalidArgumentException.class, () -> dev.fromArray(new float[] {1, 2, 3}, 2, 2));
        assertThrows(InvalidArgumentException.class,
                () -> dev.fromBuffer(ByteBuffer.allocate(16), DType.FLOAT32));
        assertThrows(InvalidArgumentException.class,
                () -> dev.fromBuffer(ByteBuffer.allocateDirect(16), DType.FLOAT32)); // big-endian
        assertThrows(InvalidArgumentException.class, () -> Isthmus.get().device("opencl:99"));
        try (DeviceBuffer b = dev.allocate(DType.INT32, 4)) {
            assertThrows(InvalidArgumentException.class, () -> b.copyFrom(new float[4]));
            assertThrows(InvalidArgumentException.class, () -> b.copyFrom(new int[3]));
            assertThrows(InvalidArgumentException.class, () -> b.toFloatArray());
            assertThrows(InvalidArgumentException.class,
                    () -> b.copyTo(ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder())));
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void useAfterCloseIsAnErrorNeverStaleData(Device dev) {
        DeviceBuffer b = dev.fromArray(new float[] {1, 2});
        long ptr = b.pointer();
        assertNotEquals(0, ptr);
        b.close();
        b.close(); // idempotent
        assertTrue(b.isClosed());
        assertThrows(ClosedBufferException.class, b::toFloatArray);
        assertThrows(ClosedBufferException.class, b::pointer);
        assertThrows(ClosedBufferException.class, () -> b.copyFrom(new float[2]));
        assertThrows(ClosedBufferException.class, () -> Ops.sum(b));
        assertArrayEquals(new long[] {2}, b.shape()); // metadata stays readable
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void copiesToEveryDevice(Device dev) {
        try (DeviceBuffer b = dev.fromArray(new int[] {3, 1, 4})) {
            for (Device target : Isthmus.get().devices()) {
                try (DeviceBuffer c = b.to(target)) {
                    assertEquals(target, c.device());
                    assertNotEquals(b.pointer(), c.pointer());
                    assertArrayEquals(new int[] {3, 1, 4}, c.toIntArray());
                }
            }
            assertFalse(b.isClosed());
        }
    }
}
