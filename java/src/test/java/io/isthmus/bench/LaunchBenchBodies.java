package io.isthmus.bench;

import io.isthmus.DeviceBuffer;
import io.isthmus.Graph;
import io.isthmus.Kernel;
import io.isthmus.LaunchConfig;
import io.isthmus.Plan;

/** Loop bodies for {@link LaunchBench}, written in Java so that the timed calls start in Java. */
public final class LaunchBenchBodies {
    private LaunchBenchBodies() {
    }

    /** @return an eager launch of the tiny kernel {@code (long n, float a, float* y)} */
    public static Runnable eager(Kernel k, LaunchConfig cfg, long n, float a, DeviceBuffer y) {
        return () -> k.launch(cfg, n, a, y);
    }

    /** @return the tiny kernel prepared (from Java: Python cannot pick between the varargs overloads) */
    public static Plan prepare(Kernel k, LaunchConfig cfg, long n, float a, DeviceBuffer y) {
        return k.prepare(cfg, n, a, y);
    }

    /** @return {@code plan::launch} */
    public static Runnable plan(Plan plan) {
        return plan::launch;
    }

    /** @return {@code graph::launch} */
    public static Runnable graph(Graph graph) {
        return graph::launch;
    }

    /** @return a capture body that launches {@code plan} {@code times} times */
    public static Runnable repeat(Plan plan, int times) {
        return () -> {
            for (int i = 0; i < times; i++) {
                plan.launch();
            }
        };
    }
}
