package io.isthmus;

import io.isthmus.spi.OpHandle;

/**
 * An op of the isthmus library (or one registered in Python) bound to one device
 * ({@link Device#library(String)}): launched with the op's own arguments, it sizes its own grid
 * from the tuning database. Its buffers must live on its device. {@link Ops} runs the same ops
 * on whichever device the buffers live on.
 *
 * <pre>{@code
 * LibraryKernel softmax = dev.library("softmax");
 * try (DeviceBuffer p = softmax.launch(logits)) { ... }
 * try (Plan plan = softmax.prepare(logits)) { plan.launch(); DeviceBuffer p = plan.result(); ... }
 * }</pre>
 */
public final class LibraryKernel {
    private final OpHandle handle;
    private final Device device;
    private final String name;

    LibraryKernel(OpHandle handle, Device device) {
        this.handle = handle;
        this.device = device;
        this.name = handle.name();
    }

    /** @return the op's name */
    public String name() {
        return name;
    }

    /** @return the device the op is bound to */
    public Device device() {
        return device;
    }

    /**
     * Runs the op once.
     *
     * @param args the op's arguments: {@link DeviceBuffer}s and Java numbers
     * @return the op's result buffer (the caller's own when the op writes into an argument), or
     *     {@code null} for an op that returns nothing
     */
    public DeviceBuffer launch(Object... args) {
        return OpCall.call(handle, null, null, args == null ? new Object[0] : args);
    }

    /**
     * Runs the op once, writing its result into {@code out} (Python's {@code out=}).
     *
     * @param out the buffer to write into
     * @param args the op's arguments: {@link DeviceBuffer}s and Java numbers
     * @return {@code out}
     */
    public DeviceBuffer launchInto(DeviceBuffer out, Object... args) {
        if (out == null) {
            throw new InvalidArgumentException("out must not be null; use launch(args...) to allocate the result");
        }
        return OpCall.call(handle, out, null, args == null ? new Object[0] : args);
    }

    /**
     * Checks and records the op once.
     *
     * @param args the op's arguments: {@link DeviceBuffer}s and Java numbers
     * @return the prepared op; {@link Plan#result()} is its result buffer, if it returns one
     */
    public Plan prepare(Object... args) {
        return new Plan(handle.prepare(Kernel.handles(args), null, null), name, args);
    }

    @Override
    public String toString() {
        return "LibraryKernel[" + name + " on " + device.id() + "]";
    }
}
