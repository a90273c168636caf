package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.PlanHandle;

/**
 * A prepared launch: the arguments were checked and packed once, so {@link #launch()} only
 * enqueues (CUDA: one driver call with a pre-packed parameter block; OpenCL: one enqueue of a
 * kernel object whose arguments are already set). {@link #bind} rebinds one argument with the
 * checks of a launch. The plan holds the memory of its buffers; launching it after one of them
 * was closed throws {@link ClosedBufferException}. Give each thread its own plan.
 *
 * <pre>{@code
 * try (Plan plan = scale.prepare(LaunchConfig.of(n), x, 2.0f, n)) {
 *     for (int i = 0; i < 1000; i++) {
 *         plan.launch();
 *     }
 *     plan.bind("a", 3.0f).launch();
 * }
 * }</pre>
 */
public final class Plan implements AutoCloseable {
    private final PlanHandle handle;
    private final String what;
    private final Object[] args;
    private DeviceBuffer result;

    Plan(PlanHandle handle, String what, Object[] args) {
        this.handle = handle;
        this.what = what;
        this.args = args == null ? new Object[0] : args.clone();
    }

    /** Enqueues the prepared launch (asynchronous, like {@link Kernel#launch}). */
    public void launch() {
        handle.launch();
    }

    /**
     * Rebinds the argument named {@code name}.
     *
     * @param name the parameter's name in the kernel source (for fused expressions: the input's name)
     * @param value a {@link DeviceBuffer} or a Java number
     * @return this plan
     */
    public Plan bind(String name, Object value) {
        if (name == null) {
            throw new InvalidArgumentException("parameter name must not be null");
        }
        handle.bindName(name, Kernel.handle(value, name));
        return this;
    }

    /**
     * Rebinds the argument at {@code index} (declaration order).
     *
     * @param index the parameter's position
     * @param value a {@link DeviceBuffer} or a Java number
     * @return this plan
     */
    public Plan bind(int index, Object value) {
        handle.bindIndex(index, Kernel.handle(value, "argument " + index));
        return this;
    }

    /**
     * @return the output of a prepared library op or fused expression (the caller's own buffer when
     *     the op writes into an input), else {@code null}; a buffer made for the plan is closed by the caller
     */
    public DeviceBuffer result() {
        if (result == null) {
            int i = handle.resultArgument();
            if (i >= 0) {
                return (DeviceBuffer) args[i];
            }
            BufferHandle h = handle.result();
            result = h == null ? null : DeviceBuffer.wrap(h);
        }
        return result;
    }

    /** Releases the plan's hold on its buffers' memory. Idempotent. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "Plan[" + what + "]";
    }
}
