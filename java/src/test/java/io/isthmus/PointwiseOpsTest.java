package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Ops.rope, Ops.siluMul, Ops.geluMul and Ops.embedding against plain Java references (double arithmetic). */
class PointwiseOpsTest {
    private static final Map<String, Object> LLAMA31 = Map.of("rope_type", "llama3", "factor", 8.0,
            "low_freq_factor", 1.0, "high_freq_factor", 4.0, "original_max_position_embeddings", 8192);

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

    /** Hugging Face's frequencies, llama3-rescaled when {@code llama3}. */
    private static double[] invFreq(int dim, double theta, boolean llama3) {
        double[] inv = new double[dim / 2];
        for (int i = 0; i < inv.length; i++) {
            double f = 1.0 / Math.pow(theta, 2.0 * i / dim);
            if (llama3) {
                double wavelen = 2 * Math.PI / f;
                if (wavelen > 8192 / 1.0) {
                    f = f / 8;
                } else if (wavelen >= 8192 / 4.0) {
                    double smooth = (8192 / wavelen - 1.0) / (4.0 - 1.0);
                    f = (1 - smooth) * f / 8 + smooth * f;
                }
            }
            inv[i] = f;
        }
        return inv;
    }

    /** rotate_half rope of (tokens, heads, dim), angle float32(pos) * float32(inv) in float32 as Hugging Face. */
    private static float[] rope(float[] x, int[] pos, int heads, int dim, double[] inv, boolean interleaved) {
        float[] y = x.clone();
        int half = dim / 2;
        for (int t = 0; t < pos.length; t++) {
            for (int h = 0; h < heads; h++) {
                int base = (t * heads + h) * dim;
                for (int i = 0; i < half; i++) {
                    double a = (float) pos[t] * (float) inv[i];
                    int i1 = interleaved ? base + 2 * i : base + i;
                    int i2 = interleaved ? base + 2 * i + 1 : base + i + half;
                    double x1 = x[i1];
                    double x2 = x[i2];
                    y[i1] = (float) (x1 * Math.cos(a) - x2 * Math.sin(a));
                    y[i2] = (float) (x2 * Math.cos(a) + x1 * Math.sin(a));
                }
            }
        }
        return y;
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void ropeTurnsQAndKInPlaceWithLlama3Scaling(Device dev) {
        Random r = new Random(27);
        int tokens = 5;
        int dim = 64;
        float[] q = random(r, tokens * 3 * dim);
        float[] k = random(r, tokens * dim);
        int[] pos = {17, 3, 3, 4000, 0};
        double[] inv = invFreq(dim, 500000.0, true);
        try (DeviceBuffer bq = dev.fromArray(q, tokens, 3, dim); DeviceBuffer bk = dev.fromArray(k, tokens, 1, dim);
             DeviceBuffer bp = dev.fromArray(pos)) {
            assertSame(bq, Ops.rope(bq, bk, bp, Ops.Rope.theta(500000).scaling(LLAMA31)));
            assertArrayEquals(rope(q, pos, 3, dim, inv, false), bq.toFloatArray(), 2e-5f);
            assertArrayEquals(rope(k, pos, 1, dim, inv, false), bk.toFloatArray(), 2e-5f);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void ropeInterleavedReplaysInAGraphWithNewPositions(Device dev) {
        Random r = new Random();
        int dim = 16;
        float[] x = random(r, 4 * 2 * dim);
        double[] inv = invFreq(dim, 10000.0, false);
        try (DeviceBuffer bx = dev.fromArray(x, 4, 2, dim); DeviceBuffer bp = dev.fromArray(new int[4])) {
            Graph g = dev.capture(() -> Ops.rope(bx, bp, Ops.Rope.DEFAULT.interleaved(true)));
            try {
                for (int step = 0; step < 3; step++) {
                    int[] pos = {r.nextInt(5000), r.nextInt(5000), step, step};
                    bp.copyFrom(pos);
                    bx.copyFrom(x);
                    g.launch();
                    assertArrayEquals(rope(x, pos, 2, dim, inv, true), bx.toFloatArray(), 2e-5f);
                }
            } finally {
                g.close();
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void gatedUnitsSeparateAndFused(Device dev) {
        Random r = new Random();
        int rows = 3;
        int n = 1 + r.nextInt(1000);
        float[] g = random(r, rows * n);
        float[] u = random(r, rows * n);
        float[] fused = new float[rows * 2 * n];
        float[] silu = new float[rows * n];
        float[] geluTanh = new float[rows * n];
        float[] geluErfLike = new float[rows * n];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < n; j++) {
                double gv = g[i * n + j];
                double uv = u[i * n + j];
                fused[i * 2 * n + j] = g[i * n + j];
                fused[i * 2 * n + n + j] = u[i * n + j];
                silu[i * n + j] = (float) (gv / (1 + Math.exp(-gv)) * uv);
                geluTanh[i * n + j] = (float) (0.5 * gv * (1 + Math.tanh(Math.sqrt(2 / Math.PI)
                        * (gv + 0.044715 * gv * gv * gv))) * uv);
                geluErfLike[i * n + j] = (float) (0.5 * gv * (1 + erf(gv / Math.sqrt(2))) * uv);
            }
        }
        try (DeviceBuffer bg = dev.fromArray(g, rows, n); DeviceBuffer bu = dev.fromArray(u, rows, n);
             DeviceBuffer bf = dev.fromArray(fused, rows, 2 * n);
             DeviceBuffer s = Ops.siluMul(bg, bu); DeviceBuffer sf = Ops.siluMul(bf);
             DeviceBuffer t = Ops.geluMul(bg, bu); DeviceBuffer out = dev.allocate(DType.FLOAT32, rows, n)) {
            assertArrayEquals(silu, s.toFloatArray(), 1e-5f);
            assertArrayEquals(silu, sf.toFloatArray(), 1e-5f);
            assertArrayEquals(new long[] {rows, n}, sf.shape());
            assertArrayEquals(geluTanh, t.toFloatArray(), 1e-5f);
            assertSame(out, Ops.geluMul(bf, null, Ops.GeluApproximate.NONE, out));
            assertArrayEquals(geluErfLike, out.toFloatArray(), 1e-5f);
            assertSame(out, Ops.siluMul(bg, bu, out));
            assertArrayEquals(silu, out.toFloatArray(), 1e-5f);
        }
    }

    /** erf by its series (|x| < 3) and continued fraction (beyond): 1e-12 where the test's values lie. */
    private static double erf(double x) {
        double ax = Math.abs(x);
        if (ax < 3) {
            double sum = 0;
            double term = ax;
            for (int k = 0; k < 100; k++) {
                sum += term / (2 * k + 1);
                term *= -ax * ax / (k + 1);
            }
            return Math.signum(x) * 2 / Math.sqrt(Math.PI) * sum;
        }
        double f = 0;
        for (int k = 60; k >= 1; k--) {
            f = k / 2.0 / (ax + f);
        }
        return Math.signum(x) * (1 - Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f));
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void embeddingGathersRowsAndNamesABadId(Device dev) {
        Random r = new Random();
        int vocab = 11;
        int hidden = 1 + r.nextInt(300);
        float[] table = random(r, vocab * hidden);
        long[] ids = {10, 0, 3, 3, 7, 1};
        float[] want = new float[ids.length * hidden];
        for (int i = 0; i < ids.length; i++) {
            System.arraycopy(table, (int) ids[i] * hidden, want, i * hidden, hidden);
        }
        try (DeviceBuffer bt = dev.fromArray(table, vocab, hidden); DeviceBuffer bi = dev.fromArray(ids, 2, 3);
             DeviceBuffer e = Ops.embedding(bi, bt); DeviceBuffer out = dev.allocate(DType.FLOAT32, 2, 3, hidden)) {
            assertArrayEquals(new long[] {2, 3, hidden}, e.shape());
            assertArrayEquals(want, e.toFloatArray());
            assertSame(out, Ops.embedding(bi, bt, out, false));
            assertArrayEquals(want, out.toFloatArray());
            bi.copyFrom(new long[] {1, 2, 3, 11, 4, 5});
            InvalidArgumentException bad = assertThrows(InvalidArgumentException.class, () -> Ops.embedding(bi, bt, out, true));
            assertTrue(bad.getMessage().contains("ids[1, 0] = 11 is out of range"), bad.getMessage());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badArgumentsAreTypedErrors(Device dev) {
        try (DeviceBuffer x = dev.allocate(DType.FLOAT32, 2, 1, 8); DeviceBuffer p = dev.allocate(DType.INT32, 2)) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> Ops.rope(x, p, Ops.Rope.DEFAULT.scaling(Map.of("rope_type", "yarn"))));
            assertTrue(e.getMessage().contains("'yarn' is not supported"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class,
                    () -> Ops.rope(x, p, Ops.Rope.DEFAULT.scaling(Map.of("rope_type", "llama3", "factor", 8.0))));
            assertTrue(e.getMessage().contains("needs the key 'low_freq_factor'"), e.getMessage());
            e = assertThrows(InvalidArgumentException.class, () -> Ops.rope(x, p, Ops.Rope.DEFAULT.rotaryDim(3)));
            assertTrue(e.getMessage().contains("rotary_dim"), e.getMessage());
            try (DeviceBuffer odd = dev.allocate(DType.FLOAT32, 2, 3)) {
                e = assertThrows(InvalidArgumentException.class, () -> Ops.siluMul(odd));
                assertTrue(e.getMessage().contains("must be even"), e.getMessage());
            }
            assertThrows(InvalidArgumentException.class, () -> Ops.rope(x, p, null));
            assertEquals(DType.FLOAT32, x.dtype());
        }
    }
}
