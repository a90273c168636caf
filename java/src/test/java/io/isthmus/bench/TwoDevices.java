package io.isthmus.bench;

import io.isthmus.DeviceBuffer;
import io.isthmus.Device;
import io.isthmus.Isthmus;
import io.isthmus.Ops;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Two Java threads, each driving its own device (the first two devices, or the ids given as
 * arguments): gemm + axpy + sum in a loop, every result checked. Run with the runtime attached:
 * {@code isthmus java -cp ... io.isthmus.bench.TwoDevices [ID1 ID2] [ROUNDS]}. Exits non-zero on a
 * wrong result or a timeout (a deadlock).
 */
public final class TwoDevices {
    private TwoDevices() {
    }

    static String drive(Device dev, int rounds, long seed) {
        int m = 96, k = 64, n = 80;
        Random rnd = new Random(seed);
        float[] a = new float[m * k];
        float[] b = new float[k * n];
        for (int i = 0; i < a.length; i++) {
            a[i] = rnd.nextInt(7) - 3;
        }
        for (int i = 0; i < b.length; i++) {
            b[i] = rnd.nextInt(7) - 3;
        }
        float[] want = new float[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                float s = 0;
                for (int p = 0; p < k; p++) {
                    s += a[i * k + p] * b[p * n + j];
                }
                want[i * n + j] = s;
            }
        }
        long t0 = System.nanoTime();
        try (DeviceBuffer da = dev.fromArray(a, m, k); DeviceBuffer db = dev.fromArray(b, k, n);
             DeviceBuffer acc = dev.allocate(io.isthmus.DType.FLOAT32, m, n)) {
            acc.copyFrom(new float[m * n]);
            for (int r = 0; r < rounds; r++) {
                try (DeviceBuffer c = Ops.gemm(da, db)) {
                    Ops.axpy(1.0, c, acc);
                }
            }
            float[] got = acc.toFloatArray();
            double total = 0;
            for (int i = 0; i < got.length; i++) {
                if (got[i] != rounds * want[i]) {
                    throw new AssertionError(dev.id() + ": element " + i + " is " + got[i] + ", expected " + rounds * want[i]);
                }
                total += got[i];
            }
            try (DeviceBuffer s = Ops.sum(acc)) {
                float sum = s.toFloatArray()[0];
                if (Math.abs(sum - total) > 1e-3 * Math.max(1, Math.abs(total))) {
                    throw new AssertionError(dev.id() + ": sum " + sum + ", expected " + total);
                }
            }
        }
        return String.format("%s (%s): %d rounds correct, %.1f us per round", dev.id(), dev.name(), rounds,
                (System.nanoTime() - t0) / 1e3 / rounds);
    }

    public static void main(String[] args) throws Exception {
        List<Device> all = Isthmus.get().devices();
        Device d1 = args.length >= 2 ? Isthmus.get().device(args[0]) : all.get(0);
        Device d2 = args.length >= 2 ? Isthmus.get().device(args[1]) : all.get(Math.min(1, all.size() - 1));
        int rounds = args.length == 1 ? Integer.parseInt(args[0]) : args.length >= 3 ? Integer.parseInt(args[2]) : 200;
        if (d1.equals(d2)) {
            System.err.println("needs two devices; found " + all);
            System.exit(2);
        }
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<String>> done = new ArrayList<>();
            done.add(pool.submit(() -> drive(d1, rounds, 1)));
            done.add(pool.submit(() -> drive(d2, rounds, 2)));
            for (Future<String> f : done) {
                System.out.println(f.get(300, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.println("TWO DEVICES OK");
    }
}
