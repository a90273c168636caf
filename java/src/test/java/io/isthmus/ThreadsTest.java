package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** 8 threads x 1,000 launches, on a shared buffer and on private ones, from both kinds of thread. */
class ThreadsTest {
    static final int THREADS = 8;
    static final int LAUNCHES = 1000;
    static final int N = 33;

    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    /** Runs the workload on {@code pool}; returns nanoseconds per launch. */
    static double run(ExecutorService pool) throws Exception {
        Device dev = Isthmus.get().device();
        Kernel add = dev.compile(Attached.ADD_ONE, "add_one", Map.of());
        try (DeviceBuffer shared = dev.allocate(DType.INT32, N)) {
            shared.copyFrom(new int[N]);
            List<Callable<int[]>> jobs = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                jobs.add(() -> {
                    try (DeviceBuffer mine = dev.fromArray(new int[N])) {
                        LaunchConfig cfg = LaunchConfig.of(N);
                        for (int i = 0; i < LAUNCHES; i++) {
                            add.launch(cfg, shared, N);
                            add.launch(cfg, mine, N);
                        }
                        return mine.toIntArray();
                    }
                });
            }
            long t0 = System.nanoTime();
            List<Future<int[]>> results = pool.invokeAll(jobs, 120, TimeUnit.SECONDS);
            int[] want = new int[N];
            java.util.Arrays.fill(want, LAUNCHES);
            for (Future<int[]> f : results) {
                assertArrayEquals(want, f.get());
            }
            long elapsed = System.nanoTime() - t0;
            java.util.Arrays.fill(want, LAUNCHES * THREADS);
            assertArrayEquals(want, shared.toIntArray());
            return (double) elapsed / (2.0 * THREADS * LAUNCHES);
        }
    }

    @Test
    @Timeout(180)
    void runtimeThreads() throws Exception {
        ExecutorService pool = Isthmus.get().executor(THREADS);
        try {
            System.out.printf("isthmus executor: %.1f us per launch%n", run(pool) / 1e3);
        } finally {
            pool.shutdown();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
    }

    @Test
    @Timeout(180)
    void plainJavaThreads() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            System.out.printf("plain Java threads: %.1f us per launch%n", run(pool) / 1e3);
        } finally {
            pool.shutdown();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
    }
}
