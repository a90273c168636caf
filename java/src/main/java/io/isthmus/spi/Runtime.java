package io.isthmus.spi;

import java.nio.ByteBuffer;
import java.util.Map;

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

    /**
     * @return {@code alpha * op(a) @ op(b) + beta * c} ({@code c} may be {@code null}; op transposes
     *         an operand when its flag is set; 3-d operands are batched)
     */
    BufferHandle gemm(BufferHandle a, BufferHandle b, BufferHandle c, double alpha, double beta, boolean transA,
                      boolean transB);

    /**
     * Tunes a library kernel (Python's {@code isthmus.tune}) and stores the results in the tuning database.
     *
     * @param kernel library kernel name
     * @param device the device
     * @param problem named problem sizes
     * @param dtype Python dtype name
     * @param strategy exhaustive, random or anneal
     * @param budget distinct configs to evaluate, 0 for the default
     * @param seconds time limit, 0 for none
     * @param seed search seed
     * @return the finished run
     */
    TuneRun tune(String kernel, DeviceHandle device, Map<String, Long> problem, String dtype, String strategy,
                 int budget, double seconds, long seed);

    /**
     * @param kernel library kernel name
     * @param device the device
     * @param problem named problem sizes
     * @param dtype Python dtype name
     * @return the launch parameters a launch uses (tuning database, else defaults)
     */
    Map<String, Long> tunedConfig(String kernel, DeviceHandle device, Map<String, Long> problem, String dtype);

    /**
     * Declares a kernel of the user's own tunable (Python's {@code isthmus.tune.declare}).
     *
     * @param name kernel name in the tuning database
     * @param source OpenCL C source
     * @param entry the kernel function
     * @param tunables tunable name to its values
     * @param defaults tunable name to its default
     * @param restrictions Python expressions over the tunables, problem sizes and device limits
     * @param problem names of the problem sizes
     * @param dtype Python dtype name of the data
     * @param output index of the buffer argument the kernel writes
     * @param space the Java callbacks: grid, inputs, scalars, reference
     */
    void declare(String name, String source, String entry, Map<String, long[]> tunables, Map<String, Long> defaults,
                 String[] restrictions, String[] problem, String dtype, int output, KernelSpace space);

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
