package demo;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;

/**
 * A Java service for the shutdown tests: main and two non-daemon workers loop allocating, summing
 * and closing a buffer until the process is stopped (a signal, or System.exit from a worker);
 * its shutdown hook still uses the runtime. Prints "ready" once every thread is looping.
 * args: "signal" (loop until stopped) or "exit" (worker-1 calls System.exit(3)).
 */
public class Serve {
    public static void main(String[] args) throws Exception {
        Device dev = Isthmus.get().device();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3}); DeviceBuffer s = Ops.sum(x)) {
                System.out.println("hook sum=" + s.toFloatArray()[0]);
            }
            System.out.flush();
        }, "app-hook"));
        boolean exit = args.length > 0 && args[0].equals("exit");
        java.util.concurrent.CountDownLatch looping = new java.util.concurrent.CountDownLatch(3);
        for (int i = 0; i < 2; i++) {
            final int id = i;
            new Thread(() -> loop(dev, looping, exit && id == 1), "worker-" + i).start();
        }
        new Thread(() -> {
            try {
                looping.await();
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("ready");
            System.out.flush();
        }, "announcer").start();
        loop(dev, looping, false);
    }

    private static void loop(Device dev, java.util.concurrent.CountDownLatch looping, boolean exit) {
        for (long n = 0; ; n++) {
            try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3, n}); DeviceBuffer s = Ops.sum(x)) {
                s.toFloatArray();
            }
            if (n == 3) {
                looping.countDown();
            }
            if (exit && n == 200) {
                System.exit(3);
            }
        }
    }
}
