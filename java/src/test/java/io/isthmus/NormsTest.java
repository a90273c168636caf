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

/** Ops' norms (isthmus.ops.rmsnorm, layernorm) against a plain Java reference in double, at odd widths. */
class NormsTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    private static float[] random(Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    /** rows x cols: s = x (+ residual), s / sqrt(mean(s^2) + eps) * (offset + w), in double. */
    static float[] rmsnorm(float[] x, float[] w, int rows, int cols, double eps, float[] residual, double offset) {
        float[] y = new float[rows * cols];
        for (int i = 0; i < rows; i++) {
            double q = 0;
            for (int j = 0; j < cols; j++) {
                double s = residual == null ? x[i * cols + j] : (float) (residual[i * cols + j] + x[i * cols + j]);
                q += s * s;
            }
            double inv = 1 / Math.sqrt(q / cols + eps);
            for (int j = 0; j < cols; j++) {
                double s = residual == null ? x[i * cols + j] : (float) (residual[i * cols + j] + x[i * cols + j]);
                y[i * cols + j] = (float) (s * inv * (offset + w[j]));
            }
        }
        return y;
    }

    /** rows x cols: s = x (+ residual), (s - mean) / sqrt(var + eps) * w + b (w, b may be null), in double. */
    static float[] layernorm(float[] x, float[] w, float[] b, int rows, int cols, double eps, float[] residual) {
        float[] y = new float[rows * cols];
        double[] s = new double[cols];
        for (int i = 0; i < rows; i++) {
            double mean = 0;
            for (int j = 0; j < cols; j++) {
                s[j] = residual == null ? x[i * cols + j] : (float) (residual[i * cols + j] + x[i * cols + j]);
                mean += s[j] / cols;
            }
            double var = 0;
            for (int j = 0; j < cols; j++) {
                var += (s[j] - mean) * (s[j] - mean) / cols;
            }
            for (int j = 0; j < cols; j++) {
                double v = (s[j] - mean) / Math.sqrt(var + eps);
                y[i * cols + j] = (float) (v * (w == null ? 1 : w[j]) + (b == null ? 0 : b[j]));
            }
        }
        return y;
    }

    private static void close(float[] want, float[] got) {
        assertEquals(want.length, got.length);
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i], 2e-6 * (Math.abs(want[i]) + 1e-2), "element " + i);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void rmsnormPlainIntoOutAndFused(Device dev) {
        Random r = new Random();
        int rows = 1 + r.nextInt(9);
        int cols = 1 + r.nextInt(3000);
        float[] xs = random(r, rows * cols);
        float[] ws = random(r, cols);
        float[] rs = random(r, rows * cols);
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols); DeviceBuffer w = dev.fromArray(ws);
             DeviceBuffer res = dev.fromArray(rs, rows, cols); DeviceBuffer out = dev.fromArray(new float[rows * cols], rows, cols);
             DeviceBuffer y = Ops.rmsnorm(x, w, 1e-6)) {
            assertArrayEquals(new long[] {rows, cols}, y.shape());
            close(rmsnorm(xs, ws, rows, cols, 1e-6, null, 0), y.toFloatArray());
            assertSame(out, Ops.rmsnorm(x, w, 1e-5, out));
            close(rmsnorm(xs, ws, rows, cols, 1e-5, null, 0), out.toFloatArray());

            // the fused add: residual += x in place, the norm of the sum (Gemma's offset) into out
            assertSame(out, Ops.rmsnorm(x, w, 1e-6, res, 1.0, out));
            close(rmsnorm(xs, ws, rows, cols, 1e-6, rs, 1.0), out.toFloatArray());
            float[] sum = new float[rows * cols];
            for (int i = 0; i < sum.length; i++) {
                sum[i] = rs[i] + xs[i];
            }
            assertArrayEquals(sum, res.toFloatArray());
            try (DeviceBuffer fresh = Ops.rmsnorm(x, w, 1e-6, res, null)) {   // a new buffer; res += x again
                float[] twice = new float[sum.length];
                for (int i = 0; i < sum.length; i++) {
                    twice[i] = sum[i] + xs[i];
                }
                close(rmsnorm(xs, ws, rows, cols, 1e-6, sum, 0), fresh.toFloatArray());
                assertArrayEquals(twice, res.toFloatArray());
            }
            assertSame(x, Ops.rmsnorm(x, w, 1e-6, x));   // in place over x
            close(rmsnorm(xs, ws, rows, cols, 1e-6, null, 0), x.toFloatArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void layernormWithAndWithoutWeightAndBiasIntoOutAndFused(Device dev) {
        Random r = new Random();
        int rows = 1 + r.nextInt(9);
        int cols = 1 + r.nextInt(3000);
        float[] xs = random(r, rows * cols);
        for (int i = 0; i < xs.length; i++) {
            xs[i] += 50;   // a mean far from 0: the variance must not cancel
        }
        float[] ws = random(r, cols);
        float[] bs = random(r, cols);
        float[] rs = random(r, rows * cols);
        try (DeviceBuffer x = dev.fromArray(xs, rows, cols); DeviceBuffer w = dev.fromArray(ws);
             DeviceBuffer b = dev.fromArray(bs); DeviceBuffer res = dev.fromArray(rs, rows, cols);
             DeviceBuffer out = dev.fromArray(new float[rows * cols], rows, cols);
             DeviceBuffer y = Ops.layernorm(x, w, b, 1e-5); DeviceBuffer plain = Ops.layernorm(x, null, null, 1e-5);
             DeviceBuffer biasOnly = Ops.layernorm(x, null, b, 1e-5)) {
            closeLn(layernorm(xs, ws, bs, rows, cols, 1e-5, null), y.toFloatArray(), cols);
            closeLn(layernorm(xs, null, null, rows, cols, 1e-5, null), plain.toFloatArray(), cols);
            closeLn(layernorm(xs, null, bs, rows, cols, 1e-5, null), biasOnly.toFloatArray(), cols);
            assertSame(out, Ops.layernorm(x, w, null, 1e-3, out));
            closeLn(layernorm(xs, ws, null, rows, cols, 1e-3, null), out.toFloatArray(), cols);
            assertSame(out, Ops.layernorm(x, w, b, 1e-5, res, out));
            closeLn(layernorm(xs, ws, bs, rows, cols, 1e-5, rs), out.toFloatArray(), cols);
            float[] sum = new float[rows * cols];
            for (int i = 0; i < sum.length; i++) {
                sum[i] = rs[i] + xs[i];
            }
            assertArrayEquals(sum, res.toFloatArray());
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> Ops.layernorm(x, w, b, 1e-5, res, res));
            assertTrue(e.getMessage().contains("out shares memory with residual"), e.getMessage());
            assertThrows(InvalidArgumentException.class, () -> Ops.layernorm(x, w, b, Double.NaN));
        }
    }

    /**
     * layernorm's inputs have a mean of 50 and a spread of 1: a few units of float32 rounding of the
     * inputs, plus the rounding of the row's sum in float32, which a mean 50 spreads from 0 makes 50
     * times larger and which grows as sqrt(cols) (the bound tests/ops/test_ops_layernorm.py uses).
     */
    private static void closeLn(float[] want, float[] got, int cols) {
        assertEquals(want.length, got.length);
        double unit = 2e-5 + 6e-8 * 50 * Math.sqrt(cols);
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i], unit * (Math.abs(want[i]) + 1), "element " + i);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void rmsnormRefusesBadArguments(Device dev) {
        try (DeviceBuffer x = dev.fromArray(new float[12], 3, 4); DeviceBuffer w = dev.fromArray(new float[4]);
             DeviceBuffer w5 = dev.fromArray(new float[5]); DeviceBuffer res = dev.fromArray(new float[12], 3, 4)) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> Ops.rmsnorm(x, w, -1.0));
            assertTrue(e.getMessage().contains("eps = -1 is out of range"), e.getMessage());
            assertThrows(InvalidArgumentException.class, () -> Ops.rmsnorm(x, w5, 1e-6));
            e = assertThrows(InvalidArgumentException.class, () -> Ops.rmsnorm(x, w, 1e-6, res, res));
            assertTrue(e.getMessage().contains("out shares memory with residual"), e.getMessage());
            assertThrows(InvalidArgumentException.class, () -> Ops.rmsnorm(x, w, 1e-6, x, null));
            assertThrows(InvalidArgumentException.class, () -> Ops.rmsnorm(null, w, 1e-6));
        }
        try (DeviceBuffer xi = dev.fromArray(new int[12], 3, 4); DeviceBuffer wi = dev.fromArray(new int[4])) {
            assertThrows(UnsupportedDtypeException.class, () -> Ops.rmsnorm(xi, wi, 1e-6));
        }
    }
}
