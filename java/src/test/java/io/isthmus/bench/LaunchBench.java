package io.isthmus.bench;

import io.isthmus.Device;
import io.isthmus.Isthmus;

import java.util.Arrays;
import java.util.concurrent.ExecutorService;

/**
 * Launch-overhead loops for benchmarks/launch_overhead.py --java: host nanoseconds per call of
 * {@code body} (an eager launch, {@code Plan::launch} or {@code Graph::launch}), on a thread of
 * {@link Isthmus#executor(int)}, median of rounds, the final synchronize not timed.
 */
public final class LaunchBench {
    private LaunchBench() {
    }

    /**
     * @param dev the device (synchronized between rounds)
     * @param body one call
     * @param calls calls per round
     * @param rounds rounds
     * @return median nanoseconds per call
     */
    public static double perCallNs(Device dev, Runnable body, int calls, int rounds) throws Exception {
        ExecutorService ex = Isthmus.get().executor(1);
        try {
            return ex.submit(() -> loop(dev, body, calls, rounds)).get();
        } finally {
            ex.shutdown();
        }
    }

    private static double loop(Device dev, Runnable body, int calls, int rounds) {
        for (int i = 0; i < Math.min(calls, 200); i++) {
            body.run();
        }
        dev.synchronize();
        double[] ns = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                body.run();
            }
            long t1 = System.nanoTime();
            dev.synchronize();
            ns[r] = (double) (t1 - t0) / calls;
        }
        Arrays.sort(ns);
        return ns[rounds / 2];
    }
}
