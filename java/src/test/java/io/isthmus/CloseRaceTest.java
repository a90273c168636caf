package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Java threads close buffers while other Java threads launch on them (eager launches and their
 * memo, prepared launches, library ops): every launch either runs on memory that stays valid or
 * throws {@link ClosedBufferException}. Each launching thread also checks a private result in a
 * fresh allocation after every launch, so a launch that wrote memory handed to a new owner is seen.
 */
// tests/crosslang runs it with Python switching threads every microsecond, so closes land between checks and enqueues
@Tag("fast-thread-switch")
class CloseRaceTest {
    static final int N = 257;
    static final int SLOTS = 8;
    static final long MILLIS = 1500;

    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    @ParameterizedTest
    @MethodSource("io.isthmus.Attached#devices")
    @Timeout(120)
    void closingWhileLaunchingNeverCorruptsOrCrashes(Device dev) throws Exception {
        Kernel scale = dev.compile(Attached.SCALE, "scale", Map.of());
        AtomicReferenceArray<DeviceBuffer> shared = new AtomicReferenceArray<>(SLOTS);
        for (int i = 0; i < SLOTS; i++) {
            shared.set(i, dev.allocate(DType.FLOAT32, N));
        }
        AtomicLong ran = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        AtomicLong checked = new AtomicLong();
        long stop = System.nanoTime() + MILLIS * 1_000_000L;
        ExecutorService pool = Isthmus.get().executor(6);
        try {
            List<Future<String>> jobs = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                final int seed = t;
                jobs.add(pool.submit(() -> launcher(dev, scale, shared, stop, seed, ran, refused, checked)));
            }
            for (int t = 0; t < 2; t++) {
                jobs.add(pool.submit(() -> closer(dev, shared, stop)));
            }
            for (Future<String> f : jobs) {
                String problem = f.get(90, TimeUnit.SECONDS);
                assertEquals("", problem);
            }
        } finally {
            pool.shutdown();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
            for (int i = 0; i < SLOTS; i++) {
                shared.get(i).close();
            }
        }
        assertTrue(ran.get() > 0 && checked.get() > 0, "ran " + ran + ", checked " + checked);
        System.out.printf("%s: %d launches ran, %d refused a closed buffer, %d private results checked%n",
                dev.id(), ran.get(), refused.get(), checked.get());
    }

    private static String launcher(Device dev, Kernel scale, AtomicReferenceArray<DeviceBuffer> shared, long stop,
                                   int seed, AtomicLong ran, AtomicLong refused, AtomicLong checked) {
        float[] ones = new float[N];
        java.util.Arrays.fill(ones, 1f);
        LaunchConfig cfg = LaunchConfig.of(N);
        int i = 0;
        try (DeviceBuffer x = dev.fromArray(ones)) {
            while (System.nanoTime() < stop) {
                DeviceBuffer s = shared.get(ThreadLocalRandom.current().nextInt(SLOTS));
                try {
                    switch ((i + seed) % 4) {
                        case 0 -> scale.launch(cfg, s, 0.5f, N);          // eager, then the launch memo
                        case 1 -> Ops.axpy(1.0, x, s);                    // a library op
                        case 2 -> {
                            try (Plan p = scale.prepare(cfg, s, 2.0f, N)) {
                                p.launch();
                            }
                        }
                        default -> Ops.axpy(0.25, s, x);                  // the closing buffer is read
                    }
                    ran.incrementAndGet();
                } catch (ClosedBufferException e) {
                    refused.incrementAndGet();
                }
                // a private result in a fresh allocation (likely memory a closed shared buffer had)
                float[] want = new float[N];
                float[] data = new float[N];
                for (int k = 0; k < N; k++) {
                    data[k] = seed * 1000 + i + k;
                    want[k] = data[k] * 3f;
                }
                try (DeviceBuffer mine = dev.fromArray(data)) {
                    scale.launch(cfg, mine, 3.0f, N);
                    float[] got = mine.toFloatArray();
                    for (int k = 0; k < N; k++) {
                        if (got[k] != want[k]) {
                            return "private result corrupted at element " + k + " after " + i + " launches: "
                                    + got[k] + " != " + want[k];
                        }
                    }
                }
                checked.incrementAndGet();
                i++;
            }
        } catch (RuntimeException e) {
            return e.toString();
        }
        return "";
    }

    private static String closer(Device dev, AtomicReferenceArray<DeviceBuffer> shared, long stop) {
        try {
            while (System.nanoTime() < stop) {
                int j = ThreadLocalRandom.current().nextInt(SLOTS);
                DeviceBuffer fresh = dev.allocate(DType.FLOAT32, N);
                DeviceBuffer old = shared.getAndSet(j, fresh);
                old.close();
                Thread.yield();
            }
        } catch (RuntimeException e) {
            return e.toString();
        }
        return "";
    }
}
