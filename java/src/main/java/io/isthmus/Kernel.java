package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.KernelHandle;

/**
 * A kernel bound to a device: compiled from source with {@link Device#compile} or taken from
 * the isthmus library with {@link Device#kernel}. Arguments are {@link DeviceBuffer}s and
 * Java numbers; numbers are converted to the kernel's declared parameter types by the runtime.
 * Safe to launch from several threads.
 *
 * <pre>{@code
 * Kernel scale = dev.compile(src, "scale", Map.of());
 * scale.launch(LaunchConfig.of(x.size()), x, 2.0f, (int) x.size());
 * }</pre>
 */
public final class Kernel {
    private final KernelHandle handle;
    private final Device device;
    private final String name;
    private final LaunchMemo memo = new LaunchMemo();

    Kernel(KernelHandle handle, Device device) {
        this.handle = handle;
        this.device = device;
        this.name = handle.name();
    }

    /** @return the kernel's name */
    public String name() {
        return name;
    }

    /** @return the device the kernel is bound to */
    public Device device() {
        return device;
    }

    /**
     * Launches a kernel on an explicit grid.
     *
     * <p>A launch repeated with the same config and the same buffers is replayed from a prepared
     * launch that the kernel keeps for it (for the {@value LaunchMemo#CAPACITY} most recent such
     * configs and buffers), with the numbers that changed since its last launch rebound first, so
     * it costs about as much as {@link Plan#launch()} plus one {@link Plan#bind} per changed number.
     *
     * @param config global and local size
     * @param args kernel arguments in declaration order: {@link DeviceBuffer}s and Java numbers
     */
    public void launch(LaunchConfig config, Object... args) {
        if (config == null) {
            throw new LaunchConfigException("launch config must not be null; library kernels are "
                    + "launched with launch(args...)", null, null);
        }
        memo.launch(handle, config, handles(args));
    }

    /**
     * Launches a library kernel with its op arguments; the kernel sizes its own grid from the
     * tuning database.
     *
     * @param args the op's arguments: {@link DeviceBuffer}s and Java numbers
     * @return the kernel's result buffer for kernels that return one, else {@code null}
     */
    public DeviceBuffer launch(Object... args) {
        Object result = handle.launch(null, null, handles(args));
        if (result == null) {
            return null;
        }
        // An op that returns one of its inputs (axpy returns y) hands back the caller's own
        // DeviceBuffer: a second wrapper would carry a second Cleaner that, once collected,
        // would release the handle the caller still uses.
        for (Object a : args) {
            if (a instanceof DeviceBuffer && ((DeviceBuffer) a).handle() == result) {
                return (DeviceBuffer) a;
            }
        }
        return DeviceBuffer.wrap((BufferHandle) result);
    }

    /**
     * Checks and packs the arguments once for repeated launches on an explicit grid.
     *
     * @param config global and local size
     * @param args kernel arguments in declaration order: {@link DeviceBuffer}s and Java numbers
     * @return the prepared launch; close it to release its hold on the buffers
     */
    public Plan prepare(LaunchConfig config, Object... args) {
        if (config == null) {
            throw new LaunchConfigException("launch config must not be null; library kernels are "
                    + "prepared with prepare(args...)", null, null);
        }
        return new Plan(handle.prepare(config.global(), config.local(), handles(args)), name, args);
    }

    /**
     * Checks and records a library kernel's op once (the kernel sizes its own grid).
     *
     * @param args the op's arguments: {@link DeviceBuffer}s and Java numbers
     * @return the prepared op; {@link Plan#result()} is its result buffer, if it returns one
     */
    public Plan prepare(Object... args) {
        return new Plan(handle.prepare(null, null, handles(args)), name, args);
    }

    static Object[] handles(Object[] args) {
        if (args == null) {
            return new Object[0];
        }
        Object[] out = new Object[args.length];
        for (int i = 0; i < args.length; i++) {
            out[i] = handle(args[i], "argument " + i);
        }
        return out;
    }

    static Object handle(Object a, String what) {
        if (a instanceof DeviceBuffer b) {
            return b.handle();
        }
        if (a instanceof Number) {
            return a;
        }
        throw new InvalidArgumentException("kernel " + what + " is "
                + (a == null ? "null" : a.getClass().getName())
                + "; expected a DeviceBuffer or a Java number", null, null);
    }

    @Override
    public String toString() {
        return "Kernel[" + name + " on " + device.id() + "]";
    }
}
