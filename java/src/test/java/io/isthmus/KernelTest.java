package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Compiling and launching from Java, and the errors that come back from Python. */
class KernelTest {
    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void libraryLaunchReturningAnInputGivesBackTheCallersBuffer(Device dev) throws Exception {
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3}); DeviceBuffer y = dev.fromArray(new float[] {1, 1, 1})) {
            LibraryKernel axpy = dev.library("axpy");
            for (int i = 0; i < 50; i++) {
                assertSame(y, axpy.launch(2.0, x, y)); // results ignored: no wrapper may release y
            }
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(20);
            }
            assertFalse(y.isClosed());
            assertArrayEquals(new float[] {101, 201, 301}, y.toFloatArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void javaNumbersConvertToDeclaredTypes(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", Map.of());
        assertEquals("scale", scale.name());
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3, 4, 5})) {
            scale.launch(LaunchConfig.of(8), x, 2.0, 5L);      // double -> float, long -> int
            scale.launch(LaunchConfig.of(5), x, 0.5f, (short) 5);
            scale.launch(new LaunchConfig(new long[] {5}, new long[] {1}), x, 3, 5);
            assertArrayEquals(new float[] {3, 6, 9, 12, 15}, x.toFloatArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void definesReachTheCompiler(Device dev) {
        String src = "__kernel void fill(__global int* x) { x[get_global_id(0)] = VALUE * 2; }";
        Kernel fill = dev.compile(src, "fill", Map.of("VALUE", 21));
        try (DeviceBuffer x = dev.allocate(DType.INT32, 3)) {
            fill.launch(LaunchConfig.of(3), x);
            assertArrayEquals(new int[] {42, 42, 42}, x.toIntArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void defineValuesOutsideTheGrammarAreRejected(Device dev) {
        String src = "__kernel void fill(__global int* x) { x[get_global_id(0)] = VALUE * 2; }";
        // a comment stands in for a space in C; a NUL would cut the option string
        for (String bad : new String[] {"1/**/+1", "1\u0000", "1 + 1", "x\"", "(1)"}) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> dev.compile(src, "fill", Map.of("VALUE", bad)));
            assertTrue(e.getMessage().contains("numbers"), e.getMessage());
            assertEquals("isthmus.errors.InvalidArgumentError", e.pythonType());
        }
        assertThrows(InvalidArgumentException.class, () -> dev.compile(src, "fill", Map.of("1VALUE", 2)));
        Map<String, Object> nullName = new HashMap<>();
        nullName.put(null, 2);
        assertThrows(InvalidArgumentException.class, () -> dev.compile(src, "fill", nullName));
        Kernel fill = dev.compile(src, "fill", Map.of("VALUE", 16));
        try (DeviceBuffer x = dev.allocate(DType.INT32, 2)) {
            fill.launch(LaunchConfig.of(2), x);
            assertArrayEquals(new int[] {32, 32}, x.toIntArray());
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void compileErrorCarriesTheBuildLog(Device dev) {
        CompileException e = assertThrows(CompileException.class,
                () -> dev.compile("__kernel void broken(__global float* x) { x[0] = ; }", "broken", null));
        assertTrue(e.log().contains("error"), e.log());
        assertEquals("broken", e.kernelName());
        assertEquals("isthmus.errors.CompileError", e.pythonType());
        assertTrue(e.pythonTraceback().contains("Traceback"), e.pythonTraceback());
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void badLaunchesGetTheRightException(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", null);
        try (DeviceBuffer x = dev.allocate(DType.FLOAT32, 4);
             DeviceBuffer ints = dev.allocate(DType.INT32, 4)) {
            InvalidArgumentException count = assertThrows(InvalidArgumentException.class,
                    () -> scale.launch(LaunchConfig.of(4), x, 1.0f));
            assertTrue(count.getMessage().contains("takes 3 arguments"), count.getMessage());
            assertNotNull(count.pythonTraceback());
            assertThrows(InvalidArgumentException.class, () -> scale.launch(LaunchConfig.of(4), ints, 1.0f, 4));
            assertThrows(InvalidArgumentException.class, () -> scale.launch(LaunchConfig.of(4), x, "2", 4));
            assertThrows(InvalidArgumentException.class, () -> scale.launch(LaunchConfig.of(4), x, x, 4));
            assertThrows(LaunchConfigException.class,
                    () -> scale.launch(new LaunchConfig(new long[] {4}, new long[] {3}), x, 1.0f, 4));
            assertThrows(LaunchConfigException.class, () -> scale.launch((LaunchConfig) null, x));
            assertThrows(InvalidArgumentException.class, () -> dev.library("no_such_kernel"));
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void libraryKernelsTakeOpArguments(Device dev) {
        try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3});
             DeviceBuffer y = dev.fromArray(new float[] {1, 1, 1})) {
            DeviceBuffer same = dev.library("axpy").launch(2.0, x, y);
            assertArrayEquals(new float[] {3, 5, 7}, y.toFloatArray());
            assertTrue(same == null || same.pointer() == y.pointer());
            try (DeviceBuffer s = dev.library("sum").launch(x)) {
                assertArrayEquals(new float[] {6}, s.toFloatArray());
            }
        }
    }
    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void repeatedLaunchesGiveTheSameResultsAsFreshOnes(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", null);
        java.util.Random rnd = new java.util.Random();
        int n = 37;
        float[] a = new float[n];
        float[] b = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = rnd.nextFloat() + 0.5f;
            b[i] = rnd.nextFloat() + 0.5f;
        }
        float[] ea = a.clone();
        float[] eb = b.clone();
        LaunchConfig cfg = LaunchConfig.of(64);
        try (DeviceBuffer x = dev.fromArray(a); DeviceBuffer y = dev.fromArray(b)) {
            for (int r = 0; r < 12; r++) {
                float f = 1.0f + (r % 3) * 0.25f;     // three scalar values: memo hits and misses
                DeviceBuffer t = r % 2 == 0 ? x : y;  // two buffers
                float[] e = r % 2 == 0 ? ea : eb;
                // a fresh, equal config object and an equal boxed number must hit the same entry
                scale.launch(LaunchConfig.of(64), t, Float.valueOf(f), Integer.valueOf(n));
                for (int i = 0; i < n; i++) {
                    e[i] *= f;
                }
            }
            scale.launch(cfg, x, 2.0, (long) n); // same values, other boxed types: converted like any launch
            for (int i = 0; i < n; i++) {
                ea[i] *= 2;
            }
            assertArrayEquals(ea, x.toFloatArray(), 1e-5f);
            assertArrayEquals(eb, y.toFloatArray(), 1e-5f);
            scale.launch(cfg, x, 1.0f, n / 2);  // a changed size argument is a new launch
            assertArrayEquals(ea, x.toFloatArray(), 1e-5f);
        }
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    void aRepeatedLaunchOfAClosedBufferThrowsAndFreesItsMemory(Device dev) {
        Kernel scale = dev.compile(Attached.SCALE, "scale", null);
        long bytes = dev.memoryInUse();
        LaunchConfig cfg = LaunchConfig.of(1 << 14);
        for (int i = 0; i < 50; i++) {
            DeviceBuffer x = dev.allocate(DType.FLOAT32, 1 << 14);
            for (int r = 0; r < 3; r++) {
                scale.launch(cfg, x, 1.0f, 1 << 14);
            }
            x.close();
            assertThrows(ClosedBufferException.class, () -> scale.launch(cfg, x, 1.0f, 1 << 14));
        }
        dev.synchronize();
        assertEquals(bytes, dev.memoryInUse()); // remembered launches hold no closed buffer's memory
    }
}
