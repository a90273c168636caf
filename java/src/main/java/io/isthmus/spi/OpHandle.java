package io.isthmus.spi;

import java.util.Map;

/**
 * An op of the runtime's registry: bound to one device ({@link DeviceHandle#op}: its buffers must
 * live there) or to none ({@link Runtime#library}: it runs where its buffers live). It sizes its
 * own grid.
 *
 * <p>{@code call1}..{@code call3}, {@code call1Into} and {@code call2Into} are {@link #call} for
 * a few positional arguments passed as parameters of their own: the bridge converts parameters
 * together with the call, but each element of an {@code Object[]} (and the array) costs it one
 * more conversion, which made a small op's call 30-60% dearer in host time.
 */
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
     * {@link #call} with one positional argument.
     *
     * @param a a {@link BufferHandle} or a boxed Java number
     * @return the result, or {@code null} when the op returns nothing
     */
    OpResult call1(Object a);

    /**
     * {@link #call} with two positional arguments.
     *
     * @param a a {@link BufferHandle} or a boxed Java number
     * @param b a {@link BufferHandle} or a boxed Java number
     * @return the result, or {@code null} when the op returns nothing
     */
    OpResult call2(Object a, Object b);

    /**
     * {@link #call} with three positional arguments.
     *
     * @param a a {@link BufferHandle} or a boxed Java number
     * @param b a {@link BufferHandle} or a boxed Java number
     * @param c a {@link BufferHandle} or a boxed Java number
     * @return the result, or {@code null} when the op returns nothing
     */
    OpResult call3(Object a, Object b, Object c);

    /**
     * {@link #call} with one positional argument, writing into {@code out}.
     *
     * @param a a {@link BufferHandle} or a boxed Java number
     * @param out the buffer to write the result into
     * @return the result ({@code out}'s handle when the op returns it)
     */
    OpResult call1Into(Object a, BufferHandle out);

    /**
     * {@link #call} with two positional arguments, writing into {@code out}.
     *
     * @param a a {@link BufferHandle} or a boxed Java number
     * @param b a {@link BufferHandle} or a boxed Java number
     * @param out the buffer to write the result into
     * @return the result ({@code out}'s handle when the op returns it)
     */
    OpResult call2Into(Object a, Object b, BufferHandle out);

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
