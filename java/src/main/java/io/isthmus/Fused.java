package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.FusedHandle;

import java.util.List;

/**
 * An elementwise expression compiled into one kernel for a device, with NumPy's type promotion
 * and scalar broadcasting: inputs are {@link DeviceBuffer}s (same shape) and Java numbers, in
 * the order of {@link #inputs()}. Made by {@link Device#fuse(String)}; errors in the expression
 * name the column.
 *
 * <pre>{@code
 * Fused f = dev.fuse("out = a * x + b * tanh(y)");
 * try (DeviceBuffer out = f.call(2.0f, x, 0.5f, y)) {
 *     float[] host = out.toFloatArray();
 * }
 * }</pre>
 */
public final class Fused {
    private final FusedHandle handle;
    private final List<String> inputs;
    private final int inPlace; // index of the input that is also the output, or -1

    Fused(FusedHandle handle) {
        this.handle = handle;
        this.inputs = List.of(handle.inputs());
        this.inPlace = inputs.indexOf(handle.output());
    }

    /** @return the expression text */
    public String expression() {
        return handle.expression();
    }

    /** @return the input names, in order of first use in the expression */
    public List<String> inputs() {
        return inputs;
    }

    /** @return the output (target) name */
    public String output() {
        return handle.output();
    }

    /**
     * Runs the expression into a new buffer (or, for {@code y = ... y ...}, into input {@code y}).
     *
     * @param args one per input: {@link DeviceBuffer}s and Java numbers
     * @return the output buffer; a new one is closed by the caller
     */
    public DeviceBuffer call(Object... args) {
        BufferHandle h = handle.call(Kernel.handles(args), null);
        return inPlace >= 0 ? (DeviceBuffer) args[inPlace] : DeviceBuffer.wrap(h);
    }

    /**
     * Runs the expression into {@code out}.
     *
     * @param out the output buffer
     * @param args one per input: {@link DeviceBuffer}s and Java numbers
     * @return {@code out}
     */
    public DeviceBuffer callInto(DeviceBuffer out, Object... args) {
        if (out == null) {
            throw new InvalidArgumentException("out must not be null");
        }
        handle.call(Kernel.handles(args), out.handle());
        return out;
    }

    /**
     * @param args one per input: {@link DeviceBuffer}s and Java numbers
     * @return a prepared launch; {@link Plan#result()} is its output, {@link Plan#bind(String, Object)} takes input names
     */
    public Plan prepare(Object... args) {
        return new Plan(handle.prepare(Kernel.handles(args), null), expression(), args);
    }

    /**
     * @param out the output buffer
     * @param args one per input: {@link DeviceBuffer}s and Java numbers
     * @return a prepared launch writing into {@code out}
     */
    public Plan prepareInto(DeviceBuffer out, Object... args) {
        if (out == null) {
            throw new InvalidArgumentException("out must not be null");
        }
        Object[] all = java.util.Arrays.copyOf(args == null ? new Object[0] : args, (args == null ? 0 : args.length) + 1);
        all[all.length - 1] = out;
        return new Plan(handle.prepare(Kernel.handles(args), out.handle()), expression(), all);
    }

    @Override
    public String toString() {
        return "Fused[" + expression() + "]";
    }
}
