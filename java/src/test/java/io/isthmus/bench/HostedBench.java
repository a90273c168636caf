package io.isthmus.bench;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Kernel;
import io.isthmus.LaunchConfig;
import io.isthmus.Ops;
import io.isthmus.Plan;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;

/**
 * The Java application of benchmarks/hosted_overhead.py, run both ways: started by isthmus
 * ({@code isthmus java}) and started by its own host ({@code java -jar}, the runtime booted in
 * process on the first {@link Isthmus#get()}, JDK 22+). It prints {@code boot} lines (the JVM's
 * start, the first {@code Isthmus.get()}, in epoch milliseconds) and one {@code result} line per
 * (thread, call): host nanoseconds per call, the loop's mean and its least chunk's.
 *
 * <p>Arguments: iterations per loop, then the device id (or {@code default}).
 */
public final class HostedBench {
    static final String SOURCE = "__kernel void scale(__global float* x, float a, int n) {\n"
            + "    int i = get_global_id(0);\n    if (i < n) x[i] = a * x[i];\n}";

    private HostedBench() {
    }

    /**
     * The three calls timed on one thread: Ops.sum into a buffer, an eager launch, Plan.launch. Each
     * loop runs in {@link #CHUNKS} chunks, synchronized at the end of each: per call, the mean over the
     * loop and the least chunk's mean (what other work on a shared machine disturbs least).
     */
    static double[][] calls(Device dev, Kernel k, DeviceBuffer x, DeviceBuffer out, int n, int iters) {
        LaunchConfig cfg = LaunchConfig.of(n);
        double[][] ns = new double[3][];
        ns[0] = time(dev, iters, () -> Ops.sum(x, out));
        ns[1] = time(dev, iters, () -> k.launch(cfg, x, 1.0f, n));
        try (Plan plan = k.prepare(cfg, x, 1.0f, n)) {
            ns[2] = time(dev, iters, plan::launch);
        }
        return ns;
    }

    static final int CHUNKS = 10;

    /** {mean, least chunk mean} ns per call of {@code call}, after 100 warm-up calls. */
    static double[] time(Device dev, int iters, Runnable call) {
        for (int i = 0; i < Math.min(iters, 100); i++) {
            call.run();
        }
        dev.synchronize();
        int per = Math.max(1, iters / CHUNKS);
        long total = 0;
        double least = Double.MAX_VALUE;
        for (int c = 0; c < CHUNKS; c++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < per; i++) {
                call.run();
            }
            dev.synchronize();
            long t = System.nanoTime() - t0;
            total += t;
            least = Math.min(least, (double) t / per);
        }
        return new double[] {(double) total / (per * CHUNKS), least};
    }

    static void print(String thread, double[][] ns) {
        String[] names = {"Ops.sum", "kernel launch", "Plan.launch"};
        for (int i = 0; i < ns.length; i++) {
            System.out.println("result " + thread + "|" + names[i] + " " + ns[i][0] + " " + ns[i][1]);
        }
    }

    public static void main(String[] args) throws Exception {
        long jvmStart = ProcessHandle.current().info().startInstant().map(java.time.Instant::toEpochMilli).orElse(-1L);
        long t0 = System.currentTimeMillis();
        Isthmus rt = Isthmus.get();
        long t1 = System.currentTimeMillis();
        System.out.println("boot jvm_start " + jvmStart + " get_start " + t0 + " get_end " + t1);
        int iters = Integer.parseInt(args[0]);
        Device dev = args.length > 1 && !args[1].equals("default") ? rt.device(args[1]) : rt.device();
        int n = 32;
        Kernel k = dev.compile(SOURCE, "scale", null);  // OpenCL C: every backend compiles it
        float[] ones = new float[n];
        java.util.Arrays.fill(ones, 1.0f);
        try (DeviceBuffer x = dev.fromArray(ones); DeviceBuffer out = Ops.sum(x)) {
            System.out.println("device " + dev.id() + " java " + System.getProperty("java.version"));
            print("main", calls(dev, k, x, out, n, iters));
            ExecutorService ex = rt.executor(1);
            try {
                print("executor", ex.submit(() -> calls(dev, k, x, out, n, iters)).get());
            } finally {
                ex.shutdown();
            }
            FutureTask<double[][]> task = new FutureTask<>((Callable<double[][]>) () -> calls(dev, k, x, out, n, iters));
            Thread t = new Thread(task, "plain-java");
            t.start();
            print("plain", task.get());
        }
        System.out.println("done");
    }
}
