package demo;

import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;

import java.util.concurrent.CountDownLatch;

/**
 * A Java app for the launcher tests: main starts non-daemon threads that use the runtime after
 * main has returned (or thrown); one of them may call System.exit.
 * args: how ("return" | "throw" | "exit"), the exit status for "exit".
 */
public class Threads {
    private static final CountDownLatch OTHERS = new CountDownLatch(2);

    public static void main(String[] args) throws Exception {
        String how = args.length > 0 ? args[0] : "return";
        for (int i = 0; i < 3; i++) {
            final int id = i;
            Thread t = new Thread(() -> work(id, how, args), "worker-" + i);
            t.start();  // non-daemon: `java` would wait for it
        }
        System.out.println("main done");
        if (how.equals("throw")) {
            throw new IllegalStateException("main failed");
        }
    }

    private static void work(int id, String how, String[] args) {
        try {
            Thread.sleep(300 + 100L * id);  // well after main has returned
        } catch (InterruptedException e) {
            return;
        }
        try (DeviceBuffer x = Isthmus.get().device().fromArray(new float[] {id, 1, 2});
             DeviceBuffer s = Ops.sum(x)) {
            System.out.println("worker-" + id + " sum=" + s.toFloatArray()[0]);
        }
        if (id != 2) {
            OTHERS.countDown();
        } else if (how.equals("exit")) {
            try {
                OTHERS.await();  // every worker's output first, then the exit
            } catch (InterruptedException e) {
                return;
            }
            System.out.flush();
            System.exit(Integer.parseInt(args[1]));
        }
    }
}
