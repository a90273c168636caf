package io.isthmus;

import java.nio.ByteBuffer;
import java.util.Map;

/**
 * Java code that tests/crosslang calls from Python: it launches kernels on buffers Python
 * made, makes buffers Python reads, and throws Java exceptions across the boundary.
 */
public final class CrossLang {
    private CrossLang() {
    }

    /** Scales a Python-made buffer in place with a kernel launched from Java. */
    public static void scaleInPlace(DeviceBuffer x, float factor) {
        Kernel k = x.device().compile(Attached.SCALE, "scale", Map.of());
        k.launch(LaunchConfig.of(x.size()), x, factor, (int) x.size());
        x.device().synchronize();
    }

    /** A Java-made buffer of {@code 0, 1, ..., n-1}, written by a Java kernel launch. */
    public static DeviceBuffer iota(Device dev, int n) {
        String src = "__kernel void iota(__global float* x) { x[get_global_id(0)] = (float) get_global_id(0); }";
        DeviceBuffer b = dev.allocate(DType.FLOAT32, n);
        dev.compile(src, "iota", null).launch(LaunchConfig.of(n), b);
        return b;
    }

    /** The pointer Java sees, for identity checks from Python. */
    public static long pointerOf(DeviceBuffer b) {
        return b.pointer();
    }

    /** Sums with Ops (a Python Buffer passed here converts implicitly). */
    public static float sum(DeviceBuffer b) {
        try (DeviceBuffer s = Ops.sum(b)) {
            return s.toFloatArray()[0];
        }
    }

    /** A Java exception that must keep its class in Python. */
    public static void fail(String message) {
        throw new IllegalStateException(message);
    }

    /** Calls into the runtime with a bad define and lets the runtime's exception through. */
    public static void compileWithBadDefine(Device dev) {
        dev.compile(Attached.SCALE, "scale", Map.of("1bad", 1));
    }

    /** The address Python's NumPy view of a direct buffer has (zero-copy proof). */
    public static long hostAddress(ByteBuffer b) {
        return Isthmus.get().runtime().hostAddress(b);
    }
}
