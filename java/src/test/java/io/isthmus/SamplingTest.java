package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Ops.argmax, Ops.topK and Ops.sample against references written here in Java (the order: larger
 * first, ties to the lower index; the draw: Philox4x32-10 and the inverse CDF in double), and a
 * captured sample replayed with a new seed and offset through {@link Graph#bindAll}.
 */
class SamplingTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    private static float[] random(Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian() * 2;
        }
        return a;
    }

    /** Each row's indices, largest value first, ties to the lower index (no NaN in these inputs). */
    private static Integer[] order(float[] x, int row, int cols) {
        Integer[] idx = IntStream.range(0, cols).boxed().toArray(Integer[]::new);
        Arrays.sort(idx, Comparator.comparingDouble((Integer i) -> -x[row * cols + i]).thenComparingInt(i -> i));
        return idx;
    }

    /** Philox4x32-10's first word at counter (c0, c1, c2, c3) under key (k0, k1). */
    static int philoxFirst(int c0, int c1, int c2, int c3, int k0, int k1) {
        for (int r = 0; r < 10; r++) {
            long p0 = (0xD2511F53L) * (c0 & 0xFFFFFFFFL);
            long p1 = (0xCD9E8D57L) * (c2 & 0xFFFFFFFFL);
            int n0 = (int) (p1 >>> 32) ^ c1 ^ k0;
            int n2 = (int) (p0 >>> 32) ^ c3 ^ k1;
            c0 = n0;
            c1 = (int) p1;
            c2 = n2;
            c3 = (int) p0;
            k0 += 0x9E3779B9;
            k1 += 0xBB67AE85;
        }
        return c0;
    }

    /** The token of a row without filters: the first whose cumulative probability exceeds u. */
    private static int drawn(float[] x, int row, int cols, double temperature, long seed, long offset) {
        int w = philoxFirst((int) offset, (int) (offset >>> 32), row, 0, (int) seed, (int) (seed >>> 32));
        double u = (w >>> 8) / 16777216.0;
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < cols; i++) {
            max = Math.max(max, x[row * cols + i] / temperature);
        }
        double[] cdf = new double[cols];
        double acc = 0;
        for (int i = 0; i < cols; i++) {
            acc += Math.exp(x[row * cols + i] / temperature - max);
            cdf[i] = acc;
        }
        for (int i = 0; i < cols; i++) {
            if (cdf[i] > u * acc) {
                return i;
            }
        }
        return cols - 1;
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void argmaxAndTopKMatchTheJavaOrder(Device dev) {
        int rows = 7;
        int cols = 1031;
        float[] xs = random(new Random(3), rows * cols);
        xs[2 * cols + 900] = 50;
        xs[2 * cols + 17] = 50; // a tie: the lower index
        int k = 5;
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols); DeviceBuffer am = Ops.argmax(x)) {
            DeviceBuffer[] top = Ops.topK(x, k);
            try (DeviceBuffer values = top[0]; DeviceBuffer indices = top[1]) {
                assertEquals(DType.INT32, am.dtype());
                assertArrayEquals(new long[] {rows, k}, indices.shape());
                int[] got = am.toIntArray();
                int[] idx = indices.toIntArray();
                float[] vals = values.toFloatArray();
                for (int r = 0; r < rows; r++) {
                    Integer[] o = order(xs, r, cols);
                    assertEquals(o[0], got[r], "row " + r);
                    for (int j = 0; j < k; j++) {
                        assertEquals(o[j], idx[r * k + j], "row " + r + " rank " + j);
                        assertEquals(xs[r * cols + o[j]], vals[r * k + j]);
                    }
                }
                assertEquals(17, got[2]);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void sampleDrawsTheTokenOfTheJavaPhiloxAndGreedyIsArgmax(Device dev) {
        int rows = 64;
        int cols = 37;
        float[] xs = random(new Random(5), rows * cols);
        long seed = 123456789012345L;
        long offset = 42;
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols);
             DeviceBuffer tokens = Ops.sample(x, 0.8, 0, 1.0, seed, offset);
             DeviceBuffer greedy = Ops.sample(x, 0.0, 0, 1.0, seed, offset);
             DeviceBuffer am = Ops.argmax(x);
             DeviceBuffer top3 = Ops.sample(x, 1.0, 3, 1.0, seed, offset)) {
            int[] got = tokens.toIntArray();
            for (int r = 0; r < rows; r++) {
                assertEquals(drawn(xs, r, cols, 0.8, seed, offset), got[r], "row " + r);
            }
            assertArrayEquals(am.toIntArray(), greedy.toIntArray());
            int[] t3 = top3.toIntArray();
            for (int r = 0; r < rows; r++) {
                Integer[] o = order(xs, r, cols);
                int token = t3[r];
                assertTrue(token == o[0] || token == o[1] || token == o[2], "row " + r + " drew " + token);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void aCapturedSampleRebindsItsSeedAndOffset(Device dev) {
        int rows = 5;
        int cols = 301;
        float[] xs = random(new Random(9), rows * cols);
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols);
             DeviceBuffer out = dev.allocate(DType.INT32, rows);
             Graph step = dev.capture(() -> Ops.sample(x, 1.0, 0, 1.0, 1L, 0L, out))) {
            for (long t = 0; t < 3; t++) {
                long seed = 1000 + t;
                step.bindAll("seed", seed).bindAll("offset", t).launch();
                try (DeviceBuffer eager = Ops.sample(x, 1.0, 0, 1.0, seed, t)) {
                    assertArrayEquals(eager.toIntArray(), out.toIntArray());
                }
                int[] got = out.toIntArray();
                for (int r = 0; r < rows; r++) {
                    assertEquals(drawn(xs, r, cols, 1.0, seed, t), got[r]);
                }
            }
            assertThrows(InvalidArgumentException.class, () -> step.bindAll("no_such_parameter", 1));
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badArgumentsThrowTypedExceptions(Device dev) {
        try (DeviceBuffer x = dev.fromArray(new float[30], 3, 10)) {
            assertThrows(InvalidArgumentException.class, () -> Ops.topK(x, 0));
            assertThrows(InvalidArgumentException.class, () -> Ops.topK(x, 11));
            assertThrows(InvalidArgumentException.class, () -> Ops.sample(x, -1.0, 0, 1.0, 0, 0));
            assertThrows(InvalidArgumentException.class, () -> Ops.sample(x, 1.0, 0, 0.0, 0, 0));
            assertThrows(InvalidArgumentException.class, () -> Ops.sample(x, 1.0, 0, 1.0, -1, 0));
            try (DeviceBuffer wrong = dev.allocate(DType.FLOAT32, 3)) {
                assertThrows(InvalidArgumentException.class, () -> Ops.argmax(x, wrong));
            }
        }
    }
}
