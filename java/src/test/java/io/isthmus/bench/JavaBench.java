package io.isthmus.bench;

import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Kernel;
import io.isthmus.LaunchConfig;

import java.nio.ByteBuffer;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;

/** Timed loops that benchmarks/java_*.py run inside the hosted JVM; every result is nanoseconds per operation. */
public final class JavaBench {
    private JavaBench() {
    }

    /** Launch loop on the calling thread. */
    public static double launchNs(Kernel k, DeviceBuffer x, int n, int iters) {
        LaunchConfig cfg = LaunchConfig.of(n);
        for (int i = 0; i < Math.min(iters, 100); i++) {
            k.launch(cfg, x, 1.0f, n);
        }
        x.device().synchronize();
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            k.launch(cfg, x, 1.0f, n);
        }
        x.device().synchronize();
        return (double) (System.nanoTime() - t0) / iters;
    }

    /** The same loop on a thread of {@link Isthmus#executor(int)} (a Python thread). */
    public static double launchOnRuntimeThreadNs(Kernel k, DeviceBuffer x, int n, int iters) throws Exception {
        ExecutorService ex = Isthmus.get().executor(1);
        try {
            return ex.submit(() -> launchNs(k, x, n, iters)).get();
        } finally {
            ex.shutdown();
        }
    }

    /**
     * The loop on a thread of {@link Isthmus#executor(int)} with a new scalar every launch (1,024
     * values in turn), so no launch repeats a recent one: Kernel's launch memo misses every time.
     */
    public static double launchFreshOnRuntimeThreadNs(Kernel k, DeviceBuffer x, int n, int iters) throws Exception {
        ExecutorService ex = Isthmus.get().executor(1);
        try {
            return ex.submit(() -> {
                LaunchConfig cfg = LaunchConfig.of(n);
                for (int i = 0; i < Math.min(iters, 100); i++) {
                    k.launch(cfg, x, 1.0f + (i % 1024) / 1024.0f, n);
                }
                x.device().synchronize();
                long t0 = System.nanoTime();
                for (int i = 0; i < iters; i++) {
                    k.launch(cfg, x, 1.0f + (i % 1024) / 1024.0f, n);
                }
                x.device().synchronize();
                return (double) (System.nanoTime() - t0) / iters;
            }).get();
        } finally {
            ex.shutdown();
        }
    }

    /** The same loop on a plain Java thread (unknown to Python). */
    public static double launchOnPlainThreadNs(Kernel k, DeviceBuffer x, int n, int iters) throws Exception {
        FutureTask<Double> task = new FutureTask<>((Callable<Double>) () -> launchNs(k, x, n, iters));
        Thread t = new Thread(task, "plain-java");
        t.start();
        return task.get();
    }

    /** Host to device from a direct ByteBuffer (allocateHost or allocateDirect). */
    public static double uploadBufferNs(DeviceBuffer b, ByteBuffer src, int iters) {
        b.copyFrom(src);
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            b.copyFrom(src);
        }
        return (double) (System.nanoTime() - t0) / iters;
    }

    /** Host to device from a float[]. */
    public static double uploadArrayNs(DeviceBuffer b, float[] src, int iters) {
        b.copyFrom(src);
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            b.copyFrom(src);
        }
        return (double) (System.nanoTime() - t0) / iters;
    }

    /** Device to host into a direct ByteBuffer. */
    public static double downloadBufferNs(DeviceBuffer b, ByteBuffer dst, int iters) {
        b.copyTo(dst);
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            b.copyTo(dst);
        }
        return (double) (System.nanoTime() - t0) / iters;
    }

    /** Device to host into a new float[]. */
    public static double downloadArrayNs(DeviceBuffer b, int iters) {
        b.toFloatArray();
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            b.toFloatArray();
        }
        return (double) (System.nanoTime() - t0) / iters;
    }
}
