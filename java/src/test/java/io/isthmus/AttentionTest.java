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

/** The attention ops of Ops (issue 28) against references written here in double precision. */
class AttentionTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    static float[] random(Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    /**
     * One sequence of dense attention: q (lq, h, d), k and v (lk, kvh, d) at offsets qo, ko (rows);
     * writes o (rows qo.., h, d) and lse[hh * lseStride + lseAt + i].
     */
    static void attend(float[] q, float[] k, float[] v, int qo, int ko, int lq, int lk, int h, int kvh, int d,
                       boolean causal, double scale, double[] o, double[] lse, int lseStride, int lseAt) {
        for (int hh = 0; hh < h; hh++) {
            int hk = hh / (h / kvh);
            for (int i = 0; i < lq; i++) {
                int at = i + lk - lq;
                double[] s = new double[lk];
                double m = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < lk; j++) {
                    if (causal && j > at) {
                        s[j] = Double.NEGATIVE_INFINITY;
                        continue;
                    }
                    double dot = 0;
                    for (int e = 0; e < d; e++) {
                        dot += (double) q[((qo + i) * h + hh) * d + e] * k[((ko + j) * kvh + hk) * d + e];
                    }
                    s[j] = dot * scale;
                    m = Math.max(m, s[j]);
                }
                double sum = 0;
                double[] acc = new double[d];
                for (int j = 0; j < lk && m > Double.NEGATIVE_INFINITY; j++) {
                    double p = Math.exp(s[j] - m);
                    sum += p;
                    for (int e = 0; e < d; e++) {
                        acc[e] += p * v[((ko + j) * kvh + hk) * d + e];
                    }
                }
                for (int e = 0; e < d; e++) {
                    o[((qo + i) * h + hh) * d + e] = sum > 0 ? acc[e] / sum : 0;
                }
                if (lse != null) {
                    lse[hh * lseStride + lseAt + i] = sum > 0 ? m + Math.log(sum) : Double.NEGATIVE_INFINITY;
                }
            }
        }
    }

    static void close(double[] want, float[] got, double tol) {
        assertEquals(want.length, got.length);
        for (int i = 0; i < want.length; i++) {
            if (Double.isInfinite(want[i])) {
                assertEquals(want[i], got[i], "element " + i);
            } else {
                assertEquals(want[i], got[i], tol, "element " + i);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void causalGroupedQueryAttentionWithLse(Device dev) {
        Random r = new Random();
        int b = 2, sq = 7, sk = 11, h = 4, kvh = 2, d = 12;
        float[] qs = random(r, b * sq * h * d), ks = random(r, b * sk * kvh * d), vs = random(r, b * sk * kvh * d);
        double[] want = new double[qs.length];
        double[] wantLse = new double[b * h * sq];
        for (int bb = 0; bb < b; bb++) {
            double[] lse = new double[h * sq];
            attend(qs, ks, vs, bb * sq, bb * sk, sq, sk, h, kvh, d, true, 1 / Math.sqrt(d), want, lse, sq, 0);
            System.arraycopy(lse, 0, wantLse, bb * h * sq, h * sq);
        }
        try (DeviceBuffer q = dev.fromArray(qs, b, sq, h, d); DeviceBuffer k = dev.fromArray(ks, b, sk, kvh, d);
             DeviceBuffer v = dev.fromArray(vs, b, sk, kvh, d); DeviceBuffer lse = dev.allocate(DType.FLOAT32, b, h, sq);
             DeviceBuffer o = Ops.attention(q, k, v); DeviceBuffer out = dev.allocate(DType.FLOAT32, b, sq, h, d)) {
            close(want, o.toFloatArray(), 1e-5);
            assertSame(out, Ops.attention(q, k, v, AttentionOptions.causalAttention().withLse(lse), out));
            close(want, out.toFloatArray(), 1e-5);
            close(wantLse, lse.toFloatArray(), 1e-5);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void variableLengthsNotCausal(Device dev) {
        Random r = new Random();
        int[] cuQ = {0, 3, 3, 12};
        int[] cuK = {0, 5, 6, 20};
        int h = 2, kvh = 1, d = 8;
        float[] qs = random(r, 12 * h * d), ks = random(r, 20 * kvh * d), vs = random(r, 20 * kvh * d);
        double[] want = new double[qs.length];
        for (int bb = 0; bb < 3; bb++) {
            attend(qs, ks, vs, cuQ[bb], cuK[bb], cuQ[bb + 1] - cuQ[bb], cuK[bb + 1] - cuK[bb], h, kvh, d, false, 0.5,
                   want, null, 0, 0);
        }
        try (DeviceBuffer q = dev.fromArray(qs, 12, h, d); DeviceBuffer k = dev.fromArray(ks, 20, kvh, d);
             DeviceBuffer v = dev.fromArray(vs, 20, kvh, d); DeviceBuffer cq = dev.fromArray(cuQ, 4);
             DeviceBuffer ck = dev.fromArray(cuK, 4);
             DeviceBuffer o = Ops.attention(q, k, v, AttentionOptions.fullAttention().withScale(0.5).withSeqlens(cq, ck))) {
            close(want, o.toFloatArray(), 1e-5);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badHeadsAreInvalidArguments(Device dev) {
        try (DeviceBuffer q = dev.allocate(DType.FLOAT32, 1, 2, 3, 8); DeviceBuffer k = dev.allocate(DType.FLOAT32, 1, 2, 2, 8)) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> Ops.attention(q, k, k));
            assertTrue(e.getMessage().contains("kv heads must divide"), e.getMessage());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void appendThenDecodeContiguousAndPagedAndMerge(Device dev) {
        Random r = new Random();
        int b = 2, len = 16, h = 4, kvh = 2, d = 8;
        float[] ks = random(r, b * len * kvh * d), vs = random(r, b * len * kvh * d), qs = random(r, b * h * d);
        float[] kn = random(r, b * kvh * d), vn = random(r, b * kvh * d);
        int[] pos = {5, 11};
        for (int bb = 0; bb < b; bb++) {   // the appended keys, in the Java copy too
            System.arraycopy(kn, bb * kvh * d, ks, (bb * len + pos[bb]) * kvh * d, kvh * d);
            System.arraycopy(vn, bb * kvh * d, vs, (bb * len + pos[bb]) * kvh * d, kvh * d);
        }
        double[] want = new double[qs.length];
        for (int bb = 0; bb < b; bb++) {   // one new token at position pos: keys 0..pos
            attend(qs, ks, vs, bb, bb * len, 1, pos[bb] + 1, h, kvh, d, true, 1 / Math.sqrt(d), want, null, 0, 0);
        }
        try (DeviceBuffer kc = dev.allocate(DType.FLOAT32, b, len, kvh, d); DeviceBuffer vc = dev.allocate(DType.FLOAT32, b, len, kvh, d);
             DeviceBuffer knb = dev.fromArray(kn, b, kvh, d); DeviceBuffer vnb = dev.fromArray(vn, b, kvh, d);
             DeviceBuffer q = dev.fromArray(qs, b, h, d); DeviceBuffer p = dev.fromArray(pos, b);
             DeviceBuffer lengths = dev.fromArray(new int[] {pos[0] + 1, pos[1] + 1}, b);
             DeviceBuffer table = dev.fromArray(new int[] {1, 0}, b, 1)) {
            kc.copyFrom(ks);
            vc.copyFrom(vs);
            Ops.kvAppend(kc, vc, knb, vnb, p);
            assertArrayEquals(ks, kc.toFloatArray());
            try (DeviceBuffer o = Ops.decodeAttention(q, kc, vc, lengths)) {
                close(want, o.toFloatArray(), 1e-5);
            }
            // the same caches as pages of 16 keys: sequence 0 in page 1, sequence 1 in page 0
            int per = len * kvh * d;
            float[] kps = new float[ks.length], vps = new float[vs.length];
            System.arraycopy(ks, 0, kps, per, per);
            System.arraycopy(ks, per, kps, 0, per);
            System.arraycopy(vs, 0, vps, per, per);
            System.arraycopy(vs, per, vps, 0, per);
            try (DeviceBuffer kp = dev.fromArray(kps, b, len, kvh, d); DeviceBuffer vp = dev.fromArray(vps, b, len, kvh, d);
                 DeviceBuffer o = Ops.pagedDecodeAttention(q, kp, vp, table, lengths)) {
                close(want, o.toFloatArray(), 1e-5);
                Ops.pagedKvAppend(kp, vp, vnb, knb, table, p);   // (swapped: the pages now hold them so)
                float[] got = kp.toFloatArray();
                for (int e = 0; e < kvh * d; e++) {
                    assertEquals(vn[e], got[per + pos[0] * kvh * d + e]);
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void mergeAndLinearAttention(Device dev) {
        Random r = new Random();
        int t = 3, h = 2, d = 5;
        float[] oa = random(r, t * h * d), ob = random(r, t * h * d), la = random(r, t * h), lb = random(r, t * h);
        double[] want = new double[oa.length];
        double[] wantLse = new double[la.length];
        for (int i = 0; i < t * h; i++) {
            double m = Math.max(la[i], lb[i]), wa = Math.exp(la[i] - m), wb = Math.exp(lb[i] - m);
            wantLse[i] = m + Math.log(wa + wb);
            for (int e = 0; e < d; e++) {
                want[i * d + e] = (wa * oa[i * d + e] + wb * ob[i * d + e]) / (wa + wb);
            }
        }
        try (DeviceBuffer a = dev.fromArray(oa, t, h, d); DeviceBuffer b = dev.fromArray(ob, t, h, d);
             DeviceBuffer sa = dev.fromArray(la, t, h); DeviceBuffer sb = dev.fromArray(lb, t, h);
             DeviceBuffer out = dev.allocate(DType.FLOAT32, t, h, d); DeviceBuffer lse = dev.allocate(DType.FLOAT32, t, h)) {
            assertSame(out, Ops.mergeAttentionStates(a, sa, b, sb, out, lse));
            close(want, out.toFloatArray(), 1e-5);
            close(wantLse, lse.toFloatArray(), 1e-5);
        }
        // linear attention, relu, causal: o_i = sum_{j<=i} (q_i.k_j) v_j / sum_{j<=i} q_i.k_j (positive inputs)
        int s = 6;
        d = 4;
        float[] qs = new float[s * d], ks = new float[s * d], vs = random(r, s * d);
        for (int i = 0; i < s * d; i++) {
            qs[i] = r.nextFloat() + 0.1f;
            ks[i] = r.nextFloat() + 0.1f;
        }
        double[] lin = new double[s * d];
        for (int i = 0; i < s; i++) {
            double den = 0;
            double[] num = new double[d];
            for (int j = 0; j <= i; j++) {
                double w = 0;
                for (int e = 0; e < d; e++) {
                    w += (double) qs[i * d + e] * ks[j * d + e];
                }
                den += w;
                for (int e = 0; e < d; e++) {
                    num[e] += w * vs[j * d + e];
                }
            }
            for (int e = 0; e < d; e++) {
                lin[i * d + e] = num[e] / den;
            }
        }
        try (DeviceBuffer q = dev.fromArray(qs, 1, s, 1, d); DeviceBuffer k = dev.fromArray(ks, 1, s, 1, d);
             DeviceBuffer v = dev.fromArray(vs, 1, s, 1, d); DeviceBuffer o = Ops.linearAttention(q, k, v, true, "relu", null)) {
            close(lin, o.toFloatArray(), 1e-5);
        }
    }
}
