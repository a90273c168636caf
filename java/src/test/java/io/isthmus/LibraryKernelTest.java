package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Library ops bound to a device (Device.library) and the out= variants of Ops, against Java references. */
class LibraryKernelTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    private static float[] random(Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = r.nextFloat() * 8 - 4;
        }
        return a;
    }

    private static float[] softmaxRows(float[] x, int rows, int cols) {
        float[] out = new float[x.length];
        for (int i = 0; i < rows; i++) {
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < cols; j++) {
                max = Math.max(max, x[i * cols + j]);
            }
            double z = 0;
            for (int j = 0; j < cols; j++) {
                z += Math.exp(x[i * cols + j] - max);
            }
            for (int j = 0; j < cols; j++) {
                out[i * cols + j] = (float) (Math.exp(x[i * cols + j] - max) / z);
            }
        }
        return out;
    }

    private static float[] nan(int n) {
        float[] a = new float[n];
        Arrays.fill(a, Float.NaN);
        return a;
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void outVariantsWriteIntoTheGivenBuffer(Device dev) {
        Random r = new Random();
        int rows = 1 + r.nextInt(6);
        int cols = 37 + r.nextInt(40);
        float[] xs = random(r, rows * cols);
        float sum = 0;
        float max = Float.NEGATIVE_INFINITY;
        for (float v : xs) {
            sum += v;
            max = Math.max(max, v);
        }
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols);
             DeviceBuffer p = dev.fromArray(nan(rows * cols), rows, cols);
             DeviceBuffer t = dev.fromArray(nan(rows * cols), cols, rows);
             DeviceBuffer one = dev.fromArray(nan(1))) {
            assertSame(p, Ops.softmax(x, p));
            assertArrayEquals(softmaxRows(xs, rows, cols), p.toFloatArray(), 1e-5f);
            assertSame(t, Ops.transpose(x, t));
            float[] tt = t.toFloatArray();
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    assertEquals(xs[i * cols + j], tt[j * rows + i]);
                }
            }
            assertSame(one, Ops.sum(x, one));
            assertEquals(sum, one.toFloatArray()[0], 1e-3f * rows * cols);
            assertSame(one, Ops.max(x, one));
            assertEquals(max, one.toFloatArray()[0]);
            assertSame(x, Ops.softmax(x, x)); // in place
            assertArrayEquals(softmaxRows(xs, rows, cols), x.toFloatArray(), 1e-5f);

            assertThrows(InvalidArgumentException.class, () -> Ops.softmax(x, t)); // cols x rows, not rows x cols
            assertThrows(InvalidArgumentException.class, () -> Ops.transpose(x, null));
            assertThrows(InvalidArgumentException.class, () -> Ops.sum(x, p)); // not one element
        }
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols)) {
            DeviceBuffer closed = dev.allocate(DType.FLOAT32, rows, cols);
            closed.close();
            assertThrows(ClosedBufferException.class, () -> Ops.softmax(x, closed));
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void gemmScalesWithoutAnAccumulator(Device dev) {
        Random r = new Random();
        int m = 3 + r.nextInt(5);
        int k = 11;
        int n = 1 + r.nextInt(9);
        float[] a = random(r, m * k);
        float[] b = random(r, n * k);
        float[] want = new float[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                float acc = 0;
                for (int q = 0; q < k; q++) {
                    acc += a[i * k + q] * b[j * k + q];
                }
                want[i * n + j] = 3 * acc;
            }
        }
        try (DeviceBuffer da = dev.fromArray(a, m, k); DeviceBuffer db = dev.fromArray(b, n, k);
             DeviceBuffer c = Ops.gemm(da, db, null, 3.0, 0.0, Transpose.B)) {
            assertArrayEquals(new long[] {m, n}, c.shape());
            assertArrayEquals(want, c.toFloatArray(), 1e-3f);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void aLibraryKernelRunsItsOpOnItsDevice(Device dev) {
        Random r = new Random();
        int rows = 2 + r.nextInt(4);
        int cols = 29;
        float[] xs = random(r, rows * cols);
        LibraryKernel softmax = dev.library("softmax");
        assertEquals("softmax", softmax.name());
        assertEquals(dev, softmax.device());
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols); DeviceBuffer y = dev.fromArray(new float[] {1, 1, 1});
             DeviceBuffer z = dev.fromArray(new float[] {1, 2, 3});
             DeviceBuffer p = softmax.launch(x); DeviceBuffer into = dev.fromArray(nan(rows * cols), rows, cols)) {
            assertArrayEquals(softmaxRows(xs, rows, cols), p.toFloatArray(), 1e-5f);
            assertSame(into, softmax.launchInto(into, x));
            assertArrayEquals(softmaxRows(xs, rows, cols), into.toFloatArray(), 1e-5f);
            assertSame(y, dev.library("axpy").launch(2.0, z, y)); // an op returning an input gives back the caller's own
            assertArrayEquals(new float[] {3, 5, 7}, y.toFloatArray());
            try (Plan plan = softmax.prepare(x)) {
                plan.launch();
                assertArrayEquals(softmaxRows(xs, rows, cols), plan.result().toFloatArray(), 1e-5f);
                plan.result().close();
            }
            assertThrows(InvalidArgumentException.class, () -> softmax.launchInto(null, x));
            assertThrows(InvalidArgumentException.class, () -> softmax.launch("x"));
        }
        for (Device other : Isthmus.get().devices()) { // with several devices (POCL_DEVICES="pthread pthread")
            if (!other.equals(dev)) {
                try (DeviceBuffer elsewhere = other.fromArray(new float[] {1, 2, 3})) {
                    InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                            () -> dev.library("sum").launch(elsewhere));
                    assertTrue(e.getMessage().contains(other.id()), e.getMessage());
                    try (DeviceBuffer s = Ops.sum(elsewhere)) { // Ops runs where the buffers live
                        assertArrayEquals(new float[] {6}, s.toFloatArray());
                    }
                }
            }
        }
        InvalidArgumentException unknown = assertThrows(InvalidArgumentException.class, () -> dev.library("softmx"));
        assertTrue(unknown.getMessage().contains("softmax"), unknown.getMessage());
        assertThrows(InvalidArgumentException.class, () -> dev.library(null));
    }
}
