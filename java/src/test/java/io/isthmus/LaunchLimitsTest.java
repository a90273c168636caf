package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Launches the device cannot run throw LaunchConfigException (never abort the JVM). */
class LaunchLimitsTest {
    static final String TOUCH = "__kernel void touch(__global int* o) "
            + "{ if (get_global_id(0) == 0 && get_global_id(1) == 0) o[0] += 1; }";

    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    static final LaunchConfig[] HOPELESS = {
        new LaunchConfig(new long[] {1L << 62}, null),
        new LaunchConfig(new long[] {Long.MAX_VALUE}, new long[] {1}),
        new LaunchConfig(new long[] {1L << 32, 1L << 32}, null),
        new LaunchConfig(new long[] {65536, 65536, 65536}, new long[] {1, 1, 1}),
    };

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void hopelessGridsThrowFromEveryLaunchPath(Device dev) {
        Kernel touch = dev.compile(TOUCH, "touch", Map.of());
        try (DeviceBuffer o = dev.fromArray(new int[] {0})) {
            for (LaunchConfig cfg : HOPELESS) {
                for (int i = 0; i < 3; i++) {  // the eager launch, then the launch memo's plan
                    assertThrows(LaunchConfigException.class, () -> touch.launch(cfg, o), cfg.toString());
                }
                assertThrows(LaunchConfigException.class, () -> touch.prepare(cfg, o), cfg.toString());
            }
            touch.launch(new LaunchConfig(new long[] {64}, new long[] {16}), o);
            assertArrayEquals(new int[] {1}, o.toIntArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void localArraysBeyondTheDeviceThrow(Device dev) {
        long n = 1L << 24;  // 64 MiB of __local floats: beyond every device's local memory
        String src = "__kernel void big(__global float* o) { __local float t[" + n + "]; t[get_local_id(0)] = 1.0f; "
                + "barrier(CLK_LOCAL_MEM_FENCE); o[get_global_id(0)] = t[(" + n + " - 1 - get_local_id(0)) % " + n
                + "]; }";
        try (DeviceBuffer o = dev.allocate(DType.FLOAT32, 16)) {
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> dev.compile(src, "big", Map.of()).launch(new LaunchConfig(new long[] {16}, new long[] {16}), o));
            // CUDA and NVIDIA's compiler refuse such a kernel already; PoCL builds it
            assertTrue(e instanceof LaunchConfigException || e instanceof CompileException, e.toString());
        }
    }
}
