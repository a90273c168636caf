package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** DType.BFLOAT16: 2-byte host transfers, exact widening, and the ops on bfloat16 buffers. */
class BFloat16Test {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    private static ByteBuffer patterns(float[] values) {
        ByteBuffer bb = ByteBuffer.allocateDirect(values.length * 2).order(ByteOrder.nativeOrder());
        for (float v : values) {
            bb.putShort(DType.floatToBfloat16(v));
        }
        return bb.flip();
    }

    /** What a float becomes after a round trip through bfloat16. */
    private static float rounded(float v) {
        return DType.bfloat16ToFloat(DType.floatToBfloat16(v));
    }

    @Test
    void conversionsRoundToNearestEven() {
        assertEquals(DType.BFLOAT16, DType.fromPythonName("bfloat16"));
        assertEquals(2, DType.BFLOAT16.size());
        assertEquals((short) 0x3f80, DType.floatToBfloat16(1.0f));
        // 1 + 2^-8 lies halfway between 1 and the next bfloat16 (1 + 2^-7): ties go to the even one, 1
        assertEquals((short) 0x3f80, DType.floatToBfloat16(1.0f + 0x1p-8f));
        // 1 + 3*2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up
        assertEquals((short) 0x3f82, DType.floatToBfloat16(1.0f + 3 * 0x1p-8f));
        assertTrue(Float.isNaN(DType.bfloat16ToFloat(DType.floatToBfloat16(Float.NaN))));
        assertEquals(Float.NEGATIVE_INFINITY, DType.bfloat16ToFloat(DType.floatToBfloat16(Float.NEGATIVE_INFINITY)));
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void roundTripMovesTwoBytePatterns(Device dev) {
        Random r = new Random();
        int n = 1009;
        float[] xs = new float[n];
        for (int i = 0; i < n; i++) {
            xs[i] = rounded((float) r.nextGaussian() * 100);
        }
        ByteBuffer src = patterns(xs);
        try (DeviceBuffer x = dev.fromBuffer(src, DType.BFLOAT16, n)) {
            assertEquals(DType.BFLOAT16, x.dtype());
            assertEquals(2L * n, x.nbytes());
            assertArrayEquals(xs, x.toFloatArray());
            ByteBuffer back = ByteBuffer.allocateDirect(n * 2).order(ByteOrder.nativeOrder());
            x.copyTo(back);
            assertEquals(src.rewind(), back.rewind());
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> x.copyFrom(xs));
            assertTrue(e.getMessage().contains("2-byte patterns"), e.getMessage());
            assertThrows(InvalidArgumentException.class, x::toIntArray);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void gemmAndAxpyInBfloat16(Device dev) {
        Random r = new Random();
        int m = 19;
        int k = 37;
        int n = 11;
        float[] a = new float[m * k];
        float[] b = new float[k * n];
        for (int i = 0; i < a.length; i++) {
            a[i] = rounded((float) r.nextGaussian());
        }
        for (int i = 0; i < b.length; i++) {
            b[i] = rounded((float) r.nextGaussian());
        }
        try (DeviceBuffer da = dev.fromBuffer(patterns(a), DType.BFLOAT16, m, k);
             DeviceBuffer db = dev.fromBuffer(patterns(b), DType.BFLOAT16, k, n);
             DeviceBuffer y = dev.fromBuffer(patterns(a), DType.BFLOAT16, m, k);
             DeviceBuffer prod = Ops.gemm(da, db)) {
            assertEquals(DType.BFLOAT16, prod.dtype());
            assertArrayEquals(new long[] {m, n}, prod.shape());
            float[] got = prod.toFloatArray();
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double want = 0;
                    double scale = 0;
                    for (int q = 0; q < k; q++) {
                        want += (double) a[i * k + q] * b[q * n + j];
                        scale += Math.abs((double) a[i * k + q] * b[q * n + j]);
                    }
                    // exact products, f32 sums, one rounding to bfloat16 (8 bits of mantissa)
                    assertEquals(want, got[i * n + j], Math.abs(want) * 0x1p-8 + scale * 1e-6, "C[" + i + "," + j + "]");
                    assertFalse(Float.isNaN(got[i * n + j]));
                }
            }
            Ops.axpy(2.0, da, y);  // y = 2a + a = 3a: one rounding of an exact f32 value
            float[] tripled = y.toFloatArray();
            for (int i = 0; i < a.length; i++) {
                assertEquals(rounded(3 * a[i]), tripled[i], "a[" + i + "]");
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void mixedDtypesAreRefused(Device dev) {
        try (DeviceBuffer bf = dev.allocate(DType.BFLOAT16, 4, 4); DeviceBuffer f = dev.allocate(DType.FLOAT32, 4, 4)) {
            assertThrows(InvalidArgumentException.class, () -> Ops.gemm(bf, f));
        }
    }
}
