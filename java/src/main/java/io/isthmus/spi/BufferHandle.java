package io.isthmus.spi;

import java.nio.ByteBuffer;

/** One Java handle on a runtime buffer (several handles may share one allocation). */
public interface BufferHandle {
    /** @return the shape */
    long[] shape();

    /** @return the dtype's NumPy name */
    String dtype();

    /** @return size in bytes */
    long nbytes();

    /** @return the device holding the buffer */
    DeviceHandle device();

    /** @return the device pointer or memory-object handle, for identity */
    long pointer();

    /**
     * Host to device.
     *
     * @param source a primitive array of the buffer's Java element type, or a direct native-order
     *     ByteBuffer (position to limit)
     */
    void copyFrom(Object source);

    /**
     * Device to host.
     *
     * @param target a direct native-order ByteBuffer, written from its position ({@code nbytes} bytes)
     */
    void copyTo(ByteBuffer target);

    /**
     * @param javaType {@code "float"}, {@code "double"}, {@code "int"} or {@code "long"}
     * @return a new primitive array with the buffer's contents, flattened
     */
    Object toArray(String javaType);

    /**
     * @param device the target device (may be the buffer's own)
     * @return a copy of the buffer on {@code device}
     */
    BufferHandle to(DeviceHandle device);

    /** Releases this handle; the allocation is freed once no language holds it. Idempotent. */
    void close();
}
