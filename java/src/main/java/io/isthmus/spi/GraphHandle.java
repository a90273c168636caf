package io.isthmus.spi;

/** A captured sequence of launches and device copies, replayed with one call. */
public interface GraphHandle {
    /** Replays the captured sequence. */
    void launch();

    /**
     * Updates one argument of the {@code step}-th captured launch: a scalar, or a buffer of the same shape.
     *
     * @param step index among the captured kernel launches
     * @param name parameter name
     * @param value a {@link BufferHandle} or a boxed Java number
     */
    void bind(int step, String name, Object value);

    /** Rebinds parameter {@code name} in every captured launch that has one (Python's {@code Graph.bind_all}). */
    void bindAll(String name, Object value);

    /** @return the number of captured steps (launches and copies) */
    int size();

    /** Releases the graph and the memory its launches hold. */
    void close();
}
