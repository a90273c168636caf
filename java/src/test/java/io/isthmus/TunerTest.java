package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Tuner mirrors isthmus.tune: a run stores its best config, which launches then use. */
// tests/crosslang gives it a private, empty tuning database
@Tag("tuning-db")
class TunerTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void tunesStoresAndIsUsedByLaunches(Device dev) {
        long n = 3001L << (2 * ordinal(dev));
        Tuner.Result r = Tuner.of("axpy").device(dev).size("n", n).strategy(Strategy.RANDOM).budget(3).seed(5).run();
        assertEquals("axpy", r.kernel());
        assertEquals(dev.id(), r.device());
        assertEquals(3, r.evaluations());
        assertEquals(3L, r.evaluationsByStatus().get("ok"));
        assertTrue(r.bestMs() > 0 && r.speedup() >= 1.0, r.toString());
        // Same size bucket (4096, 16384, ...): the launch uses the tuned config.
        assertEquals(r.best(), Tuner.config("axpy", dev, Map.of("n", n + 999), DType.FLOAT32));
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3}); DeviceBuffer y = dev.fromArray(new float[3])) {
            Ops.axpy(2.0, x, y);
            assertEquals(6.0f, y.toFloatArray()[2]);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badRequestsAreInvalidArguments(Device dev) {
        assertThrows(InvalidArgumentException.class, () -> Tuner.of("fft").device(dev).size("n", 10).run());
        assertThrows(InvalidArgumentException.class, () -> Tuner.of("gemm").device(dev).size("n", 10).run());
        assertThrows(InvalidArgumentException.class,
                () -> Tuner.config("softmax", dev, Map.of("n", 10L), DType.FLOAT32));
        // nulls are typed errors, not NullPointerExceptions (issue 15, item 9)
        Map<String, Long> withNull = new HashMap<>();
        withNull.put("n", null);
        assertThrows(InvalidArgumentException.class, () -> Tuner.config("axpy", null, Map.of("n", 10L), DType.FLOAT32));
        assertThrows(InvalidArgumentException.class, () -> Tuner.config("axpy", dev, null, DType.FLOAT32));
        assertThrows(InvalidArgumentException.class, () -> Tuner.config("axpy", dev, Map.of("n", 10L), null));
        assertThrows(InvalidArgumentException.class, () -> Tuner.config(null, dev, Map.of("n", 10L), DType.FLOAT32));
        assertThrows(InvalidArgumentException.class, () -> Tuner.config("axpy", dev, withNull, DType.FLOAT32));
        assertThrows(InvalidArgumentException.class, () -> Tuner.of("axpy").dtype(null));
        assertThrows(InvalidArgumentException.class, () -> Tuner.of("axpy").strategy((Strategy) null));
        assertThrows(InvalidArgumentException.class, () -> Tuner.of("axpy").size(null, 3));
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void aVariantFlagTunesTheKernelItsCallLaunches(Device dev) {
        // gemm on bfloat16 with trans_b: the tensor-core family compiled for B stored N x K
        Tuner.Result r = Tuner.of("gemm").device(dev).dtype(DType.BFLOAT16).flag("trans_b", true)
                .size("m", 17).size("n", 40 << ordinal(dev)).size("k", 24).strategy(Strategy.RANDOM).budget(2).run();
        assertEquals("gemm_mma", r.kernel());
        assertTrue(r.bestMs() > 0, r.toString());
        assertThrows(InvalidArgumentException.class,
                () -> Tuner.of("axpy").device(dev).size("n", 10).flag("trans_b", true).run());
        assertThrows(InvalidArgumentException.class,
                () -> Tuner.of("gemm").device(dev).size("m", 8).size("n", 8).size("k", 8).flag("budget", true).run());
        assertThrows(InvalidArgumentException.class, () -> Tuner.of("gemm").flag(null, true));
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void declaredKernelIsTunedCheckedAndLaunchedWithItsBest(Device dev) {
        TunableKernel k = TunerKernels.scale2();
        long n = 1000L << (2 * ordinal(dev));
        Tuner.Result r = Tuner.of(k.name()).device(dev).size("n", n).strategy(Strategy.EXHAUSTIVE).run();
        assertEquals(4, r.evaluations());
        assertEquals(3L, r.evaluationsByStatus().get("ok"));
        assertEquals(1L, r.evaluationsByStatus().get("wrong"));
        assertEquals(r.best(), k.config(dev, Map.of("n", n - 1)));
        float[] xs = new float[999];
        Random rng = new Random(1);
        for (int i = 0; i < xs.length; i++) {
            xs[i] = rng.nextFloat();
        }
        try (DeviceBuffer x = dev.fromArray(xs); DeviceBuffer y = dev.allocate(DType.FLOAT32, 999)) {
            k.launch(dev, Map.of("n", 999L), x, y);
            float[] got = y.toFloatArray();
            for (int i = 0; i < xs.length; i++) {
                assertEquals(2 * xs[i], got[i], 1e-6f);
            }
        }
    }

    /**
     * The device's position among its backend's devices: each tunes its own problem bucket, since
     * identical devices (two PoCL devices in one process) share tuning-database keys, and the
     * database keeps the best of all their runs.
     */
    private static int ordinal(Device dev) {
        return Integer.parseInt(dev.id().substring(dev.id().indexOf(':') + 1));
    }
}
