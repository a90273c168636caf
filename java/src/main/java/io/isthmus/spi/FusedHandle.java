package io.isthmus.spi;

/** A fused elementwise expression compiled for one device. */
public interface FusedHandle {
    /** @return the expression text */
    String expression();

    /** @return the input names, in order of first use */
    String[] inputs();

    /** @return the output (target) name */
    String output();

    /**
     * Runs the expression.
     *
     * @param args one per input: {@link BufferHandle}s and boxed Java numbers
     * @param out the output buffer, or {@code null} to allocate one
     * @return the output buffer
     */
    BufferHandle call(Object[] args, BufferHandle out);

    /**
     * @param args one per input: {@link BufferHandle}s and boxed Java numbers
     * @param out the output buffer, or {@code null} to allocate one
     * @return a prepared launch of the expression
     */
    PlanHandle prepare(Object[] args, BufferHandle out);
}
