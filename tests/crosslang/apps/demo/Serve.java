package demo;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;

/**
 * A Java service for the shutdown tests: main and two non-daemon workers loop allocating, summing
 * and closing a buffer until the process is stopped (a signal, or System.exit from a worker);
 * its shutdown hook still uses the runtime. Prints "ready" once every thread is looping.
 * args: "signal" (loop until stopped), "late" (the same, and JPype's hook, if it ever finishes,
 * sleeps 2 s after closing the bridge) or "exit" (worker-1 calls System.exit(3)).
 */
public class Serve {
    public static void main(String[] args) throws Exception {
        Device dev = Isthmus.get().device();
        java.util.concurrent.CountDownLatch stopping = new java.util.concurrent.CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.countDown();
            try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3}); DeviceBuffer s = Ops.sum(x)) {
                System.out.println("hook sum=" + s.toFloatArray()[0]);
            }
            System.out.flush();
        }, "app-hook"));
        boolean exit = args.length > 0 && args[0].equals("exit");
        if (args.length > 0 && args[0].equals("late")) {
            // a thread that the OS does not run during the runtime's step: it stays in Java from the start
            // of the shutdown (the application's hook) for 1 s, then calls the runtime
            new Thread(() -> {
                try {
                    stopping.await();
                } catch (InterruptedException e) {
                    return;
                }
                long until = System.nanoTime() + 1_000_000_000L;
                while (System.nanoTime() < until) {
                    try {
                        Thread.sleep(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                    } catch (InterruptedException e) {
                        // JPype's hook interrupts the application's threads: keep away for the whole second
                    }
                }
                try (DeviceBuffer x = dev.fromArray(new float[] {1, 2}); DeviceBuffer s = Ops.sum(x)) {
                    s.toFloatArray();
                }
            }, "late").start();
            // JPype's hook, if let finish, runs this after it closed the bridge: the JVM stays up 2 s more
            Object jpype = Class.forName("org.jpype.JPypeContext").getMethod("getInstance").invoke(null);
            jpype.getClass().getMethod("_addPost", Runnable.class).invoke(jpype, (Runnable) () -> {
                try {
                    Thread.sleep(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
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
