package io.isthmus;

import io.isthmus.spi.KernelHandle;

/**
 * A kernel compiled from source with {@link Device#compile}, bound to a device and launched on an
 * explicit grid. Arguments are {@link DeviceBuffer}s and Java numbers; numbers are converted to
 * the kernel's declared parameter types by the runtime. Safe to launch from several threads.
 * (Library ops, which size their own grid, are {@link LibraryKernel}s: {@link Device#library}.)
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
        memo.launch(handle, need(config), handles(args));
    }

    /**
     * Checks and packs the arguments once for repeated launches on an explicit grid.
     *
     * @param config global and local size
     * @param args kernel arguments in declaration order: {@link DeviceBuffer}s and Java numbers
     * @return the prepared launch; close it to release its hold on the buffers
     */
    public Plan prepare(LaunchConfig config, Object... args) {
        LaunchConfig c = need(config);
        return new Plan(handle.prepare(c.global(), c.local(), handles(args)), name, args);
    }

    private LaunchConfig need(LaunchConfig config) {
        if (config == null) {
            throw new LaunchConfigException("kernel '" + name + "' needs a launch config: "
                    + "launch(LaunchConfig.of(globalSize), args...); library ops size their own grid: "
                    + "Device.library(name).launch(args...)");
        }
        return config;
    }

    static Object[] handles(Object[] args) {
        if (args == null) {
            return new Object[0];
        }
        Object[] out = new Object[args.length];
        for (int i = 0; i < args.length; i++) {
            out[i] = handle(args[i], i);
        }
        return out;
    }

    /** {@link #handle(Object, String)} for argument {@code index}, with no string built unless it fails. */
    static Object handle(Object a, int index) {
        if (a instanceof DeviceBuffer b) {
            return b.handle();
        }
        return a instanceof Number ? a : handle(a, "argument " + index);
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
                + "; expected a DeviceBuffer or a Java number");
    }

    @Override
    public String toString() {
        return "Kernel[" + name + " on " + device.id() + "]";
    }
}
