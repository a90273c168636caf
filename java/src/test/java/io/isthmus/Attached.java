package io.isthmus;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.stream.Stream;

/** Test helpers: devices of the attached runtime; tests that need one are skipped in a plain JVM. */
final class Attached {
    private Attached() {
    }

    static void requireAttached() {
        assumeTrue(Isthmus.isAttached(), "needs the isthmus runtime: run through tests/crosslang or `isthmus java`");
    }

    /** Every device, for {@code @MethodSource("io.isthmus.Attached#devices")}. */
    static Stream<Device> devices() {
        if (!Isthmus.isAttached()) {
            return Stream.empty();
        }
        List<Device> all = Isthmus.get().devices();
        return all.stream();
    }

    static final String SCALE = """
            __kernel void scale(__global float* x, float a, int n) {
                int i = get_global_id(0);
                if (i < n) x[i] = a * x[i];
            }
            """;

    static final String ADD_ONE = """
            __kernel void add_one(__global int* x, int n) {
                int i = get_global_id(0);
                if (i < n) atomic_add(&x[i], 1);
            }
            """;
}
