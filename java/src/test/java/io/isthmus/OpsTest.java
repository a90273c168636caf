package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Ops mirror isthmus.ops; checked against plain Java references on odd sizes. */
class OpsTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    private static float[] random(Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = r.nextFloat() * 2 - 1;
        }
        return a;
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void integerSumsHaveNumpysDtype(Device dev) {
        int[] xs = new int[4099];
        java.util.Arrays.fill(xs, Integer.MAX_VALUE);
        try (DeviceBuffer x = dev.fromArray(xs); DeviceBuffer s = Ops.sum(x); DeviceBuffer m = Ops.max(x)) {
            assertEquals(DType.INT64, s.dtype()); // int32 sums in 64 bits, as NumPy's
            assertEquals(4099L * Integer.MAX_VALUE, s.toLongArray()[0]);
            assertEquals(DType.INT32, m.dtype());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void reductionsAndAxpy(Device dev) {
        Random r = new Random(7);
        float[] xs = random(r, 1009);
        float[] ys = random(r, 1009);
        float sum = 0;
        float max = Float.NEGATIVE_INFINITY;
        float[] want = new float[xs.length];
        for (int i = 0; i < xs.length; i++) {
            sum += xs[i];
            max = Math.max(max, xs[i]);
            want[i] = 0.5f * xs[i] + ys[i];
        }
        try (DeviceBuffer x = dev.fromArray(xs); DeviceBuffer y = dev.fromArray(ys);
             DeviceBuffer s = Ops.sum(x); DeviceBuffer m = Ops.max(x)) {
            assertEquals(sum, s.toFloatArray()[0], 1e-3);
            assertEquals(max, m.toFloatArray()[0]);
            Ops.axpy(0.5, x, y);
            assertArrayEquals(want, y.toFloatArray(), 1e-6f);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void scaleIntoANewBufferAndInPlace(Device dev) {
        Random r = new Random();
        int n = 1 + r.nextInt(5000);
        float[] xs = random(r, n);
        float alpha = r.nextFloat() * 4 - 2;
        float[] want = new float[n];
        for (int i = 0; i < n; i++) {
            want[i] = alpha * xs[i];
        }
        try (DeviceBuffer x = dev.fromArray(xs); DeviceBuffer y = Ops.scale(alpha, x)) {
            assertArrayEquals(want, y.toFloatArray(), 1e-6f);
            assertSame(x, Ops.scale(alpha, x, x));
            assertArrayEquals(want, x.toFloatArray(), 1e-6f);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void matricesSoftmaxAndTranspose(Device dev) {
        Random r = new Random(11);
        int m = 7;
        int k = 13;
        int n = 5;
        float[] a = random(r, m * k);
        float[] b = random(r, k * n);
        float[] c0 = random(r, m * n);
        float[] ab = new float[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                float acc = 0;
                for (int q = 0; q < k; q++) {
                    acc += a[i * k + q] * b[q * n + j];
                }
                ab[i * n + j] = acc;
            }
        }
        try (DeviceBuffer da = dev.fromArray(a, m, k); DeviceBuffer db = dev.fromArray(b, k, n);
             DeviceBuffer dc = dev.fromArray(c0, m, n);
             DeviceBuffer prod = Ops.gemm(da, db); DeviceBuffer t = Ops.transpose(prod);
             DeviceBuffer sm = Ops.softmax(prod)) {
            assertArrayEquals(ab, prod.toFloatArray(), 1e-4f);
            assertArrayEquals(new long[] {n, m}, t.shape());
            float[] tt = t.toFloatArray();
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    assertEquals(ab[i * n + j], tt[j * m + i], 1e-4f);
                }
            }
            float[] p = sm.toFloatArray();
            for (int i = 0; i < m; i++) {
                float rowMax = Float.NEGATIVE_INFINITY;
                for (int j = 0; j < n; j++) {
                    rowMax = Math.max(rowMax, ab[i * n + j]);
                }
                double z = 0;
                for (int j = 0; j < n; j++) {
                    z += Math.exp(ab[i * n + j] - rowMax);
                }
                for (int j = 0; j < n; j++) {
                    assertEquals(Math.exp(ab[i * n + j] - rowMax) / z, p[i * n + j], 1e-5);
                }
            }
            DeviceBuffer out = Ops.gemm(da, db, dc, 2.0, -1.0);
            float[] got = out.toFloatArray();
            for (int i = 0; i < m * n; i++) {
                assertEquals(2 * ab[i] - c0[i], got[i], 1e-4f);
            }
            assertSame(dc, out);
            assertThrows(InvalidArgumentException.class, () -> Ops.gemm(db, db));
            assertThrows(InvalidArgumentException.class, () -> Ops.axpy(1, da, db));
            assertThrows(InvalidArgumentException.class, () -> Ops.sum(null));
        }
    }

    /** op(A)[i][q] of a batch entry: A stored m x k, or k x m when transposed (Java reference). */
    private static float opA(float[] a, int entry, int i, int q, int m, int k, boolean t) {
        int base = entry * m * k;
        return t ? a[base + q * m + i] : a[base + i * k + q];
    }

    private static float opB(float[] b, int entry, int q, int j, int k, int n, boolean t) {
        int base = entry * k * n;
        return t ? b[base + j * k + q] : b[base + q * n + j];
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void gemmTransposesAndBatches(Device dev) {
        Random r = new Random(13);
        int batch = 3;
        int m = 5;
        int k = 19;
        int n = 7;
        for (Transpose tr : Transpose.values()) {
            float[] a = random(r, batch * m * k);
            float[] w = random(r, k * n);  // shared by every entry
            float[] c0 = random(r, batch * m * n);
            float[] want = new float[batch * m * n];
            for (int e = 0; e < batch; e++) {
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        float acc = 0;
                        for (int q = 0; q < k; q++) {
                            acc += opA(a, e, i, q, m, k, tr.a()) * opB(w, 0, q, j, k, n, tr.b());
                        }
                        want[(e * m + i) * n + j] = acc;
                    }
                }
            }
            long[] aShape = tr.a() ? new long[] {batch, k, m} : new long[] {batch, m, k};
            long[] wShape = tr.b() ? new long[] {n, k} : new long[] {k, n};
            try (DeviceBuffer da = dev.fromArray(a, aShape); DeviceBuffer dw = dev.fromArray(w, wShape);
                 DeviceBuffer dc = dev.fromArray(c0, batch, m, n); DeviceBuffer prod = Ops.gemm(da, dw, tr)) {
                assertArrayEquals(new long[] {batch, m, n}, prod.shape());
                assertArrayEquals(want, prod.toFloatArray(), 1e-4f, tr.toString());
                DeviceBuffer out = Ops.gemm(da, dw, dc, -0.5, 2.0, tr);
                assertSame(dc, out);
                float[] got = out.toFloatArray();
                for (int i = 0; i < want.length; i++) {
                    assertEquals(-0.5f * want[i] + 2 * c0[i], got[i], 1e-4f, tr.toString());
                }
                // b read the other way round: k (19) meets n (7), a typed error
                Transpose flipB = tr.a() ? (tr.b() ? Transpose.A : Transpose.BOTH)
                                         : (tr.b() ? Transpose.NONE : Transpose.B);
                assertThrows(InvalidArgumentException.class, () -> Ops.gemm(da, dw, flipB));
            }
        }
        try (DeviceBuffer x = dev.fromArray(random(r, 6), 2, 3)) {
            assertThrows(InvalidArgumentException.class, () -> Ops.gemm(x, x, null));
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void anyRegisteredOpByName(Device dev) {
        Random r = new Random();
        int n = 1 + r.nextInt(3000);
        float[] xs = random(r, n);
        float[] ys = random(r, n);
        float alpha = r.nextFloat() * 4 - 2;
        float[] scaled = new float[n];
        float[] axpy = new float[n];
        for (int i = 0; i < n; i++) {
            scaled[i] = alpha * xs[i];
            axpy[i] = alpha * xs[i] + ys[i];
        }
        float[] poison = new float[n];
        java.util.Arrays.fill(poison, Float.NaN);
        try (DeviceBuffer x = dev.fromArray(xs); DeviceBuffer y = dev.fromArray(ys);
             DeviceBuffer out = dev.fromArray(poison); DeviceBuffer s = Ops.call("scale", (double) alpha, x)) {
            assertArrayEquals(scaled, s.toFloatArray(), 1e-6f);
            assertSame(out, Ops.callInto("scale", out, (double) alpha, x));
            assertArrayEquals(scaled, out.toFloatArray(), 1e-6f);
            assertSame(y, Ops.call("axpy", (double) alpha, x, y));  // the op updates y: the caller's own buffer
            assertArrayEquals(axpy, y.toFloatArray(), 1e-5f);
            try (DeviceBuffer t = Ops.call("sum", x)) {
                assertArrayEquals(new long[] {1}, t.shape());
            }
            InvalidArgumentException unknown = assertThrows(InvalidArgumentException.class,
                    () -> Ops.call("softmx", x));
            assertTrue(unknown.getMessage().contains("softmax"), unknown.getMessage());
            assertThrows(InvalidArgumentException.class, () -> Ops.call(null, x));
            assertThrows(InvalidArgumentException.class, () -> Ops.callInto("scale", null, 1.0, x));
            assertThrows(InvalidArgumentException.class, () -> Ops.call("scale", x));  // alpha missing
            assertThrows(InvalidArgumentException.class, () -> Ops.call("scale", "2", x));
            DeviceBuffer closed = dev.fromArray(xs);
            closed.close();
            assertThrows(ClosedBufferException.class, () -> Ops.call("scale", 2.0, closed));
        }
    }
}
