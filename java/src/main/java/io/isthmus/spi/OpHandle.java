package io.isthmus.spi;

import java.util.Map;

/**
 * An op of the runtime's registry: bound to one device ({@link DeviceHandle#op}: its buffers must
 * live there) or to none ({@link Runtime#library}: it runs where its buffers live). It sizes its
 * own grid.
 *
 * <p>{@link #call4} is {@link #call} for up to four positional arguments passed as parameters of
 * their own, the unused ones {@code null}: the bridge converts parameters together with the call,
 * but each element of an {@code Object[]} (and the array) costs it one more conversion, which made
 * a small op's call 30-60% dearer in host time.
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
     * {@link #call} with at most four positional arguments and no options. The arguments fill
     * the slots from {@code a}; the slots after the last one are {@code null} (an argument is
     * never {@code null}), so the slots say how many there are: a count parameter would cost
     * the bridge one more conversion (0.8 us a call, benchmarks/diagnostics/jpype_params.py).
     *
     * @param a a {@link BufferHandle} or a boxed Java number, or {@code null} for no argument
     * @param b a {@link BufferHandle} or a boxed Java number, or {@code null}
     * @param c a {@link BufferHandle} or a boxed Java number, or {@code null}
     * @param d a {@link BufferHandle} or a boxed Java number, or {@code null}
     * @param out the buffer to write the result into, or {@code null} to allocate one
     * @return the result ({@code out}'s or an argument's handle when the op returns it), or
     *     {@code null} when the op returns nothing
     */
    OpResult call4(Object a, Object b, Object c, Object d, BufferHandle out);

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
