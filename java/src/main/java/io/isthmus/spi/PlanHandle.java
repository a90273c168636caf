package io.isthmus.spi;

/** A prepared launch: arguments checked and packed once, {@link #launch()} only enqueues. */
public interface PlanHandle {
    /** Enqueues the launch (or, for a library op of several launches, replays them). */
    void launch();

    /**
     * Rebinds one argument by parameter name, with the checks of a launch.
     *
     * @param name parameter name as declared in the kernel source
     * @param value a {@link BufferHandle} or a boxed Java number
     */
    void bindName(String name, Object value);

    /**
     * Rebinds one argument by position, with the checks of a launch.
     *
     * @param index parameter index
     * @param value a {@link BufferHandle} or a boxed Java number
     */
    void bindIndex(int index, Object value);

    /**
     * @return the output buffer of a library op or fused expression that the plan allocated, else
     *     {@code null} (see {@link #resultArgument()})
     */
    BufferHandle result();

    /**
     * @return the index of the argument that is the output (an op writing into an input, a fused
     *     expression's {@code out}), or -1
     */
    int resultArgument();

    /** Releases the plan's hold on its buffers. */
    void close();
}
