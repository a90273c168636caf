package io.isthmus.spi;

/** A compiled kernel bound to a device, launched on an explicit grid (library ops are {@link OpHandle}s). */
public interface KernelHandle {
    /** @return the kernel's name */
    String name();

    /**
     * Launches the kernel. {@code args} holds {@link BufferHandle}s and boxed Java numbers.
     *
     * @param global global size
     * @param local local size, or {@code null} to let the runtime choose
     * @param args kernel arguments
     */
    void launch(long[] global, long[] local, Object[] args);

    /**
     * Checks and packs the arguments once.
     *
     * @param global global size
     * @param local local size, or {@code null} to let the runtime choose
     * @param args kernel arguments ({@link BufferHandle}s and boxed Java numbers)
     * @return the prepared launch
     */
    PlanHandle prepare(long[] global, long[] local, Object[] args);

    /**
     * A prepared launch for repeating an eager launch with these exact arguments: it does not
     * keep closed buffers' memory alive, and launching it after one was closed throws.
     *
     * @param global global size
     * @param local local size, or {@code null} to let the runtime choose
     * @param args kernel arguments ({@link BufferHandle}s and boxed Java numbers)
     * @return the prepared launch
     */
    PlanHandle memo(long[] global, long[] local, Object[] args);
}
