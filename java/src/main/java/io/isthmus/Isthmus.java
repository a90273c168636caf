package io.isthmus;

import io.isthmus.spi.DeviceHandle;
import io.isthmus.spi.OpHandle;
import io.isthmus.spi.Runtime;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;

/**
 * Entry point of the isthmus Java API: the runtime attached to this JVM.
 *
 * <p>The runtime is the isthmus Python package, running in the same process; the JVM is
 * hosted by it. Start Java code with {@code isthmus java -cp app.jar com.example.Main} (or
 * from Python with {@code isthmus.java.start()}), then:
 *
 * <pre>{@code
 * Device dev = Isthmus.get().device();
 * try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3});
 *      DeviceBuffer y = dev.allocate(DType.FLOAT32, 3)) {
 *     y.copyFrom(new float[] {1, 1, 1});
 *     Ops.axpy(2.0, x, y);
 *     float[] out = y.toFloatArray(); // {3, 5, 7}
 * }
 * }</pre>
 *
 * <p>Devices are passed explicitly to every call, so results never depend on which thread
 * makes it; threads from {@link #executor(int)} make the cheapest calls.
 */
public final class Isthmus {
    static final String HOW_TO_LAUNCH = "the isthmus runtime is not attached to this JVM: run Java code "
            + "with `isthmus java -cp CLASSPATH MAIN_CLASS [ARGS]` (or `isthmus java -jar APP.jar`), "
            + "or from Python call isthmus.java.start() before using io.isthmus; for build tools and IDEs "
            + "(Maven surefire's <jvm>, run configurations), `isthmus jvm-home` makes a Java home whose bin/java "
            + "does this";

    private static volatile Isthmus current;

    private final Runtime runtime;
    /** Ops resolved by name, once each: a call then crosses with its arguments only. */
    private final ConcurrentHashMap<String, OpHandle> ops = new ConcurrentHashMap<>();

    private Isthmus(Runtime runtime) {
        this.runtime = runtime;
    }

    /**
     * The attached runtime. In a JVM that isthmus did not start ({@code java -jar}, a build tool's
     * test JVM, Spring Boot, Spark), on JDK 22 or later, the first call boots the runtime in this
     * process (once; concurrent callers wait for it) from the Python environment named by
     * {@code -Disthmus.python=PATH} or {@code ISTHMUS_PYTHON}, else the one {@code isthmus
     * maven-install} or {@code isthmus jvm-home} recorded; the class path must hold JPype's
     * support classes (the {@code io.isthmus:jpype-support} dependency of the installed pom).
     * {@code --enable-native-access=ALL-UNNAMED} keeps the JDK from warning about it.
     *
     * @return the runtime of this process
     * @throws NotAttachedException if no runtime is attached and none can boot here (JDK 17-21, no
     *         Python named, ...); the message says why and how to launch
     */
    public static Isthmus get() {
        Isthmus i = current;
        if (i == null) {
            return InProcess.boot();
        }
        return i;
    }

    /** @return whether a runtime is attached to this JVM */
    public static boolean isAttached() {
        return current != null;
    }

    /** @return the attached runtime, or {@code null} (never boots one) */
    static Isthmus attached() {
        return current;
    }

    static void attach(Runtime runtime) {
        current = runtime == null ? null : new Isthmus(runtime);
    }

    Runtime runtime() {
        return runtime;
    }

    /**
     * @param name an op of the runtime's registry
     * @return its handle, resolved on first use (an unknown name throws and keeps nothing)
     */
    OpHandle op(String name) {
        OpHandle h = ops.get(name);
        if (h == null) {
            h = runtime.library(name);
            OpHandle raced = ops.putIfAbsent(name, h);
            if (raced != null) {
                h = raced;
            }
        }
        return h;
    }

    /** @return every device of every available backend */
    public List<Device> devices() {
        DeviceHandle[] handles = runtime.devices();
        List<Device> out = new ArrayList<>(handles.length);
        for (DeviceHandle h : handles) {
            out.add(new Device(h));
        }
        return List.copyOf(out);
    }

    /** @return the default device ({@code ISTHMUS_DEVICE}, else the best available) */
    public Device device() {
        return new Device(runtime.device(null));
    }

    /**
     * @param id a device id such as {@code "opencl:0"} or {@code "cuda:0"}
     * @return the device
     * @throws InvalidArgumentException if there is no such device
     */
    public Device device(String id) {
        if (id == null) {
            throw new InvalidArgumentException("device id must not be null; use device() for the default");
        }
        return new Device(runtime.device(id));
    }

    /**
     * An executor whose threads are started by the runtime, so every isthmus call from a task
     * costs what the same call from Python costs (a thread the runtime has never seen pays for a
     * new thread state on every call). Shut it down when done; the runtime also shuts it down
     * when the JVM is detached.
     *
     * @param threads number of threads, at least 1
     * @return a fixed-size executor
     */
    public ExecutorService executor(int threads) {
        if (threads < 1) {
            throw new InvalidArgumentException("executor needs at least 1 thread, got " + threads);
        }
        return RuntimeExecutor.start(runtime, threads);
    }

    /** @return the number of open device buffers in the runtime, for leak checks */
    public long liveBuffers() {
        Releases.drain();
        return runtime.liveBuffers();
    }

    /** @return the version of the attached runtime (the isthmus Python package), e.g. {@code "0.1.0"} */
    public String version() {
        return runtime.version();
    }
}
