package io.isthmus.spi;

import java.util.Map;

/** A library op bound to one device: its buffers must live there; it sizes its own grid. */
public interface OpHandle {
    /** @return the op's name, e.g. {@code "softmax"} */
    String name();

    /**
     * Runs the op once (one crossing).
     *
     * @param args the op's positional arguments: {@link BufferHandle}s and boxed Java numbers
     * @param out the buffer to write the result into, or {@code null} to allocate one
     * @param options the op's keyword arguments, or {@code null} for none
     * @return the result, or {@code null} when the op returns nothing
     */
    OpResult call(Object[] args, BufferHandle out, Map<String, Object> options);

    /**
     * Checks and records the op once; the plan replays it.
     *
     * @param args the op's positional arguments: {@link BufferHandle}s and boxed Java numbers
     * @param out the buffer to write the result into, or {@code null} to allocate one
     * @param options the op's keyword arguments, or {@code null} for none
     * @return the prepared op; its {@link PlanHandle#resultArgument()} counts {@code args}, then {@code out}
     */
    PlanHandle prepare(Object[] args, BufferHandle out, Map<String, Object> options);
}
