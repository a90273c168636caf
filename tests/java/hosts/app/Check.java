package app;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;

/**
 * What every host runs (tests/java/test_hosted_hosts.py): Ops.sum and Ops.softmax of the numbers in
 * ISTHMUS_TEST_X, from the calling thread, a plain Java thread and a thread of Isthmus.executor, one
 * line each, then which class loader io.isthmus came from and how many buffers are left open.
 */
public final class Check {
    private Check() {
    }

    public static float[] parse(String csv) {
        String[] p = csv.split(",");
        float[] out = new float[p.length];
        for (int i = 0; i < p.length; i++) {
            out[i] = Float.parseFloat(p[i]);
        }
        return out;
    }

    public static String line(String where, float[] x) {
        Device dev = Isthmus.get().device();
        try (DeviceBuffer b = dev.fromArray(x); DeviceBuffer s = Ops.sum(b);
             DeviceBuffer m = dev.fromArray(x, 1, x.length); DeviceBuffer y = Ops.softmax(m)) {
            StringBuilder sb = new StringBuilder("check ").append(where).append(" sum ").append(s.toFloatArray()[0])
                    .append(" softmax");
            for (float v : y.toFloatArray()) {
                sb.append(' ').append(v);
            }
            return sb.toString();
        }
    }

    public static List<String> all() throws Exception {
        float[] x = parse(System.getenv("ISTHMUS_TEST_X"));
        List<String> out = new ArrayList<>();
        out.add(line("caller", x));
        FutureTask<String> plain = new FutureTask<>((Callable<String>) () -> line("thread", x));
        new Thread(plain, "plain-java").start();
        out.add(plain.get());
        ExecutorService ex = Isthmus.get().executor(1);
        try {
            out.add(ex.submit(() -> line("executor", x)).get());
        } finally {
            ex.shutdown();
        }
        out.add("loader " + Isthmus.class.getClassLoader().getClass().getName() + " live "
                + Isthmus.get().liveBuffers());
        return out;
    }
}
