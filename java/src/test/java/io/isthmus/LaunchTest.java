package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Prepared launches, captured graphs and fused kernels from Java. */
class LaunchTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void planLaunchesAndRebinds(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", Map.of());
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3, 4, 5});
             DeviceBuffer other = dev.fromArray(new float[] {1, 1, 1, 1, 1});
             Plan plan = scale.prepare(LaunchConfig.of(5), x, 2.0f, 5)) {
            plan.launch();
            plan.launch();
            assertArrayEquals(new float[] {4, 8, 12, 16, 20}, x.toFloatArray());
            plan.bind("a", 0.5).launch();
            assertArrayEquals(new float[] {2, 4, 6, 8, 10}, x.toFloatArray());
            plan.bind(0, other).bind("a", 3).launch();
            assertArrayEquals(new float[] {3, 3, 3, 3, 3}, other.toFloatArray());
            assertNull(plan.result());
            assertThrows(InvalidArgumentException.class, () -> plan.bind("nope", 1));
            assertThrows(InvalidArgumentException.class, () -> plan.bind(1, x));
            assertThrows(InvalidArgumentException.class, () -> plan.bind("a", "text"));
            assertThrows(LaunchConfigException.class, () -> scale.prepare(null, x, 1.0f, 5));
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void closedBufferIsAnExceptionNotACrash(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", Map.of());
        DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3});
        try (Plan plan = scale.prepare(LaunchConfig.of(3), x, 2.0f, 3)) {
            x.close();
            assertThrows(ClosedBufferException.class, plan::launch);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void libraryKernelsPrepare(Device dev) {
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3, 4});
             DeviceBuffer y = dev.fromArray(new float[] {1, 1, 1, 1});
             Plan axpy = dev.library("axpy").prepare(2.0, x, y);
             Plan sum = dev.library("sum").prepare(x)) {
            axpy.launch();
            assertArrayEquals(new float[] {3, 5, 7, 9}, y.toFloatArray());
            assertSame(y, axpy.result());
            sum.launch();
            try (DeviceBuffer s = sum.result()) {
                assertArrayEquals(new float[] {10}, s.toFloatArray());
            }
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void graphCapturesAndReplays(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", Map.of());
        LibraryKernel axpy = dev.library("axpy");
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3});
             DeviceBuffer y = dev.fromArray(new float[] {0, 0, 0});
             Plan twice = scale.prepare(LaunchConfig.of(3), x, 2.0f, 3);
             Graph g = dev.capture(() -> {
                 twice.launch();
                 axpy.launch(1.0, x, y);
             })) {
            assertEquals(2, g.size());
            assertArrayEquals(new float[] {1, 2, 3}, x.toFloatArray()); // nothing ran while capturing
            g.launch();
            g.launch();
            assertArrayEquals(new float[] {4, 8, 12}, x.toFloatArray());
            assertArrayEquals(new float[] {6, 12, 18}, y.toFloatArray());
            g.bind(0, "a", 1.0f).launch();
            assertArrayEquals(new float[] {10, 20, 30}, y.toFloatArray());
            assertThrows(InvalidArgumentException.class, () -> g.bind(5, "a", 1.0f));
        }
        assertThrows(IllegalStateException.class, () -> dev.capture(() -> {
            throw new IllegalStateException("from the body");
        }));
        assertThrows(InvalidArgumentException.class, () -> dev.capture(() -> dev.synchronize()));
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void fusedExpressions(Device dev) {
        Fused f = dev.fuse("out = a * x + b * tanh(y)");
        assertEquals(List.of("a", "x", "b", "y"), f.inputs());
        assertEquals("out", f.output());
        float[] xs = {0.5f, -1f, 2f};
        float[] ys = {0.1f, 0.2f, -0.3f};
        try (DeviceBuffer x = dev.fromArray(xs); DeviceBuffer y = dev.fromArray(ys);
             DeviceBuffer out = f.call(2.0, x, 0.5, y);
             DeviceBuffer into = dev.allocate(DType.FLOAT32, 3);
             Plan plan = f.prepareInto(into, 1.0, x, 1.0, y)) {
            float[] got = out.toFloatArray();
            for (int i = 0; i < 3; i++) {
                assertEquals(2 * xs[i] + 0.5 * Math.tanh(ys[i]), got[i], 1e-5);
            }
            assertSame(into, f.callInto(into, 0.0, x, 1.0, y));
            assertEquals(Math.tanh(ys[2]), into.toFloatArray()[2], 1e-5);
            plan.bind("a", 3.0).launch();
            assertEquals(3 * xs[1] + Math.tanh(ys[1]), into.toFloatArray()[1], 1e-5);
            assertSame(into, plan.result());
            Fused inPlace = dev.fuse("y = a * x + y");
            assertSame(y, inPlace.call(1.0, x, y));
        }
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> dev.fuse("out = x +* y"));
        assertTrue(e.getMessage().contains("column 10"), e.getMessage());
        e = assertThrows(InvalidArgumentException.class, () -> dev.fuse("out = tanhh(x)"));
        assertTrue(e.getMessage().contains("unknown function 'tanhh'"), e.getMessage());
    }
}
