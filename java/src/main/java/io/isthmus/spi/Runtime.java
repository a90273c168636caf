package io.isthmus.spi;

import java.nio.ByteBuffer;

/** The runtime as a whole: device discovery, library operations, threads. */
public interface Runtime {
    /** @return every device of every available backend */
    DeviceHandle[] devices();

    /**
     * @param id a device id such as {@code "opencl:0"}, or {@code null} for the default device
     * @return the device
     */
    DeviceHandle device(String id);

    /** In place: {@code y = a * x + y}. */
    void axpy(double a, BufferHandle x, BufferHandle y);

    /** @return a one-element buffer holding the sum of {@code x} */
    BufferHandle sum(BufferHandle x);

    /** @return a one-element buffer holding the maximum of {@code x} */
    BufferHandle max(BufferHandle x);

    /** @return row-wise softmax of {@code x} as a new buffer */
    BufferHandle softmax(BufferHandle x);

    /** @return the transpose of the 2-d buffer {@code x} as a new buffer */
    BufferHandle transpose(BufferHandle x);

    /** @return {@code alpha * a @ b + beta * c} ({@code c} may be {@code null}) */
    BufferHandle gemm(BufferHandle a, BufferHandle b, BufferHandle c, double alpha, double beta);

    /**
     * Starts {@code count} runtime threads (known to the runtime, so calls from them are cheap),
     * each running {@code body} once; used by {@link io.isthmus.Isthmus#executor(int)}.
     */
    void startThreads(Runnable body, String namePrefix, int count);

    /** @return the number of open device buffers in the runtime (both languages) */
    long liveBuffers();

    /** @return the Python package version and backend versions, for reports */
    String version();

    /**
     * Wraps a direct, native-order ByteBuffer as a 1-d host array view without copying and
     * returns its address; used by tests and benchmarks to prove zero-copy paths.
     */
    long hostAddress(ByteBuffer buffer);
}
