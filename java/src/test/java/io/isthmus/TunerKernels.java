package io.isthmus;

/** A kernel declared tunable from Java, for TunerTest and tests/crosslang (public: Python calls it). */
public final class TunerKernels {
    private TunerKernels() {
    }

    public static final String SCALE2 = """
            __kernel void scale2(const int n, __global const float* x, __global float* y) {
            #if WG == 16
                const float f = 3.0f;   /* a wrong config: the tuner must reject it */
            #else
                const float f = 2.0f;
            #endif
                const int i = get_global_id(0);
                if (i < n) y[i] = f * x[i];
            }
            """;

    /** @return scale2_java (y = 2x; WG=16 computes 3x, a config the tuner must reject), declared */
    public static TunableKernel scale2() {
        return TunableKernel.builder("scale2_java", SCALE2)
                .entry("scale2")
                .tunable("WG", new long[] {16, 32, 64, 128}, 32)
                .restriction("WG <= max_work_group_size")
                .problem("n")
                .grid((p, c) -> new LaunchConfig(new long[] {(p.get("n") + c.get("WG") - 1) / c.get("WG") * c.get("WG")},
                        new long[] {c.get("WG")}))
                .scalars(p -> new Object[] {p.get("n").intValue()})
                .inputs((p, rng) -> {
                    float[] x = new float[p.get("n").intValue()];
                    for (int i = 0; i < x.length; i++) {
                        x[i] = rng.nextFloat();
                    }
                    return new Object[] {x, new float[x.length]};
                })
                .output(1)
                .reference(in -> {
                    float[] x = (float[]) in[0];
                    float[] y = new float[x.length];
                    for (int i = 0; i < x.length; i++) {
                        y[i] = 2 * x[i];
                    }
                    return y;
                })
                .declare();
    }
}
