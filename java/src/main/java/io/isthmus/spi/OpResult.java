package io.isthmus.spi;

/**
 * What one library op returned, in one crossing: the result's handle with its shape and dtype,
 * so the Java side wraps it without asking the runtime again.
 *
 * <p>When the op returned a buffer the caller passed in (an input it updated, or {@code out}),
 * {@link #handle()} is that very handle and {@link #shape()}/{@link #dtype()} are {@code null}:
 * the caller already holds a {@code DeviceBuffer} for it.
 */
public final class OpResult {
    private final BufferHandle handle;
    private final long[] shape;
    private final String dtype;

    /**
     * @param handle the result's handle, never {@code null}
     * @param shape the result's shape, or {@code null} when {@code handle} is one the caller passed in;
     *     the runtime shares one array per shape among results: read it, copy it, never change it
     * @param dtype the result's NumPy dtype name, or {@code null} when {@code handle} is one the caller passed in
     */
    public OpResult(BufferHandle handle, long[] shape, String dtype) {
        this.handle = handle;
        this.shape = shape;
        this.dtype = dtype;
    }

    /** @return the result's handle */
    public BufferHandle handle() {
        return handle;
    }

    /** @return the result's shape (shared, not copied: never change it), or {@code null} for a buffer the caller passed in */
    public long[] shape() {
        return shape;
    }

    /** @return the result's NumPy dtype name, or {@code null} for a buffer the caller passed in */
    public String dtype() {
        return dtype;
    }
}
