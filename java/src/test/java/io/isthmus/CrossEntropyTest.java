package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Ops.crossEntropy and Ops.fusedLinearCrossEntropy against a Java reference in double. */
class CrossEntropyTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    private static float[] random(Random r, int n, double scale) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) (r.nextGaussian() * scale);
        }
        return a;
    }

    /**
     * Row losses and d(sum of row losses)/dx, as torch's cross_entropy with label smoothing, plus z-loss.
     * Ignored rows: loss 0, gradient 0. grad has x's length; the losses come back.
     */
    static double[] reference(float[] x, long[] t, int cols, long ignore, double eps, double z, double[] grad) {
        int rows = t.length;
        double[] loss = new double[rows];
        for (int r = 0; r < rows; r++) {
            if (t[r] == ignore) {
                continue;
            }
            double m = Double.NEGATIVE_INFINITY;
            double sumX = 0;
            for (int c = 0; c < cols; c++) {
                m = Math.max(m, x[r * cols + c]);
                sumX += x[r * cols + c];
            }
            double s = 0;
            for (int c = 0; c < cols; c++) {
                s += Math.exp(x[r * cols + c] - m);
            }
            double lse = m + Math.log(s);
            double nll = lse - x[r * cols + (int) t[r]];
            double smooth = lse - sumX / cols;
            loss[r] = (1 - eps) * nll + eps * smooth + z * lse * lse;
            for (int c = 0; c < cols; c++) {
                double p = Math.exp(x[r * cols + c] - lse);
                grad[r * cols + c] = p * (1 + 2 * z * lse) - eps / cols - (c == t[r] ? 1 - eps : 0);
            }
        }
        return loss;
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void lossAndGradientInPlace(Device dev) {
        Random r = new Random();
        int rows = 1 + r.nextInt(9);
        int cols = 1 + r.nextInt(3000);
        float[] x = random(r, rows * cols, 2.0);
        long[] t = new long[rows];
        for (int i = 0; i < rows; i++) {
            t[i] = i % 4 == 3 ? -100 : r.nextInt(cols);
        }
        double[] g = new double[rows * cols];
        double[] rowLoss = reference(x, t, cols, -100, 0.1, 1e-4, g);
        int counted = 0;
        double sum = 0;
        for (int i = 0; i < rows; i++) {
            counted += t[i] == -100 ? 0 : 1;
            sum += rowLoss[i];
        }
        float[] wantGrad = new float[g.length];
        for (int i = 0; i < g.length; i++) {
            wantGrad[i] = (float) (g[i] / counted);
        }
        try (DeviceBuffer logits = dev.fromArray(x, rows, cols); DeviceBuffer targets = dev.fromArray(t, rows);
             DeviceBuffer plain = Ops.crossEntropy(logits, targets);
             DeviceBuffer none = Ops.crossEntropy(logits, targets, -100, 0.1, "none", 1e-4);
             DeviceBuffer mean = Ops.crossEntropy(logits, targets, -100, 0.1, "mean", 1e-4, logits)) {
            assertEquals(DType.FLOAT32, mean.dtype());
            float[] perRow = none.toFloatArray();
            assertEquals(rows, perRow.length);
            for (int i = 0; i < rows; i++) {
                assertEquals(rowLoss[i], perRow[i], 1e-4 * (1 + Math.abs(rowLoss[i])));
            }
            assertEquals(sum / counted, mean.toFloatArray()[0], 1e-4 * (1 + Math.abs(sum / counted)));
            assertTrue(Float.isFinite(plain.toFloatArray()[0]));
            assertArrayEquals(wantGrad, logits.toFloatArray(), 1e-6f);   // the gradient, over the logits
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void fusedLinearGivesTheLossAndBothGradients(Device dev) {
        Random r = new Random(5);
        int tokens = 19;
        int h = 12;
        int v = 53;
        float[] hs = random(r, tokens * h, 0.3);
        float[] ws = random(r, v * h, 1.0);
        long[] t = new long[tokens];
        for (int i = 0; i < tokens; i++) {
            t[i] = i == 4 ? -100 : r.nextInt(v);
        }
        float[] logits = new float[tokens * v];
        for (int i = 0; i < tokens; i++) {
            for (int j = 0; j < v; j++) {
                double acc = 0;
                for (int k = 0; k < h; k++) {
                    acc += (double) hs[i * h + k] * ws[j * h + k];
                }
                logits[i * v + j] = (float) acc;
            }
        }
        double[] g = new double[tokens * v];
        double[] rowLoss = reference(logits, t, v, -100, 0, 0, g);   // reduction "sum": the gradient unscaled
        double sum = 0;
        for (double l : rowLoss) {
            sum += l;
        }
        float[] wantGh = new float[tokens * h];
        float[] wantGw = new float[v * h];
        for (int i = 0; i < tokens; i++) {
            for (int k = 0; k < h; k++) {
                double acc = 0;
                for (int j = 0; j < v; j++) {
                    acc += g[i * v + j] * ws[j * h + k];
                }
                wantGh[i * h + k] = (float) acc;
            }
        }
        for (int j = 0; j < v; j++) {
            for (int k = 0; k < h; k++) {
                double acc = 0;
                for (int i = 0; i < tokens; i++) {
                    acc += g[i * v + j] * hs[i * h + k];
                }
                wantGw[j * h + k] = (float) acc;
            }
        }
        try (DeviceBuffer hidden = dev.fromArray(hs, tokens, h); DeviceBuffer weight = dev.fromArray(ws, v, h);
             DeviceBuffer targets = dev.fromArray(t, tokens);
             DeviceBuffer gh = dev.fromArray(new float[tokens * h], tokens, h);
             DeviceBuffer gw = dev.fromArray(new float[v * h], v, h);
             DeviceBuffer loss = Ops.fusedLinearCrossEntropy(hidden, weight, targets, null, -100, "sum", gh, gw, null);
             DeviceBuffer alone = Ops.fusedLinearCrossEntropy(hidden, weight, targets, null, -100, "sum")) {
            assertEquals(sum, loss.toFloatArray()[0], 1e-4 * (1 + Math.abs(sum)));
            assertEquals(sum, alone.toFloatArray()[0], 1e-4 * (1 + Math.abs(sum)));
            assertArrayEquals(wantGh, gh.toFloatArray(), 1e-4f);
            assertArrayEquals(wantGw, gw.toFloatArray(), 1e-4f);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badInputsAreTypedErrors(Device dev) {
        try (DeviceBuffer logits = dev.fromArray(new float[12], 3, 4);
             DeviceBuffer targets = dev.fromArray(new long[] {0, 9, 1}, 3);
             DeviceBuffer shortTargets = dev.fromArray(new long[] {0, 1}, 2)) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> Ops.crossEntropy(logits, targets));
            assertTrue(e.getMessage().contains("out of range"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> Ops.crossEntropy(logits, shortTargets));
            assertTrue(e.getMessage().contains("targets have shape"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> Ops.crossEntropy(logits, targets, -100, 0, "avg", 0));
            assertTrue(e.getMessage().contains("reduction='avg'"), e.getMessage());
            assertThrows(InvalidArgumentException.class, () -> Ops.crossEntropy(logits, targets, -100, 0, null, 0));
        }
    }
}
