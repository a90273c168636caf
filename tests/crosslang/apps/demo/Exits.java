package demo;

import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;

/** A Java app for the launcher tests: uses the runtime, prints to both streams, then exits as told. */
public class Exits {
    public static void main(String[] args) {
        try (DeviceBuffer x = Isthmus.get().device().fromArray(new float[] {1, 2, 3});
             DeviceBuffer s = Ops.sum(x)) {
            System.out.println("sum=" + s.toFloatArray()[0] + " args=" + String.join(",", args));
        }
        System.err.println("to stderr");
        String how = args.length > 0 ? args[0] : "return";
        switch (how) {
            case "throw" -> throw new IllegalStateException("boom");
            case "return" -> { }
            default -> System.exit(Integer.parseInt(how));
        }
    }
}
