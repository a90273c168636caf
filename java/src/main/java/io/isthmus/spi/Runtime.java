package io.isthmus.spi;

import java.nio.ByteBuffer;
import java.util.Map;

/** The runtime as a whole: device discovery, library operations, threads. */
public interface Runtime {
    /**
     * @return every device of every available backend
     */
    DeviceHandle[] devices();

    /**
     * @param id a device id such as {@code "opencl:0"}, or {@code null} for the default device
     * @return the device
     */
    DeviceHandle device(String id);

    /**
     * Runs a library op (Python's {@code isthmus.ops.NAME}) on the device its buffers live on, in
     * one crossing: the result comes back with its shape and dtype.
     *
     * @param name the op, e.g. {@code "softmax"}
     * @param args the op's positional arguments: {@link BufferHandle}s and boxed Java numbers
     * @param out the buffer to write the result into ({@code out=}), or {@code null}
     * @param options the op's keyword arguments (booleans, numbers, strings, handles), or {@code null}
     * @return the result, or {@code null} when the op returns nothing
     */
    OpResult op(String name, Object[] args, BufferHandle out, Map<String, Object> options);

    /**
     * Resolves an op of the runtime's registry (a library op, or one registered in Python with
     * {@code isthmus.ops.registry.register}) once; the handle runs it on the device its buffers
     * live on, one crossing a call, with no name to pass ({@link io.isthmus.Ops} keeps one per name).
     *
     * @param name the op, e.g. {@code "softmax"}
     * @return the op
     * @throws io.isthmus.InvalidArgumentException if no op is registered under {@code name}
     */
    OpHandle library(String name);

    /**
     * In place: {@code y = a * x + y}.
     *
     * @param a scale
     * @param x input
     * @param y input and output
     * @deprecated use {@link #op} with {@code "axpy"}
     */
    @Deprecated
    void axpy(double a, BufferHandle x, BufferHandle y);

    /**
     * @param x input
     * @return a one-element buffer holding the sum of {@code x}
     * @deprecated use {@link #op} with {@code "sum"}
     */
    @Deprecated
    BufferHandle sum(BufferHandle x);

    /**
     * @param x input
     * @return a one-element buffer holding the maximum of {@code x}
     * @deprecated use {@link #op} with {@code "max"}
     */
    @Deprecated
    BufferHandle max(BufferHandle x);

    /**
     * @param x input
     * @return row-wise softmax of {@code x} as a new buffer
     * @deprecated use {@link #op} with {@code "softmax"}
     */
    @Deprecated
    BufferHandle softmax(BufferHandle x);

    /**
     * @param x a 2-d input
     * @return the transpose of {@code x} as a new buffer
     * @deprecated use {@link #op} with {@code "transpose"}
     */
    @Deprecated
    BufferHandle transpose(BufferHandle x);

    /**
     * {@code alpha * op(a) @ op(b) + beta * c}; op transposes an operand when its flag is set; 3-d
     * operands are batched.
     *
     * @param a left operand
     * @param b right operand
     * @param c accumulator, or {@code null}
     * @param alpha scale of the product
     * @param beta scale of {@code c}
     * @param transA whether {@code a} is read transposed
     * @param transB whether {@code b} is read transposed
     * @return a new buffer, or {@code c} itself when given
     * @deprecated use {@link #op} with {@code "gemm"} and the options {@code trans_a}, {@code trans_b}
     */
    @Deprecated
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
     * @param flags the op's variant flags (trans_a, trans_b for gemm) by name
     * @return the finished run
     */
    TuneRun tune(String kernel, DeviceHandle device, Map<String, Long> problem, String dtype, String strategy,
                 int budget, double seconds, long seed, Map<String, Boolean> flags);

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
     *
     * @param body what each thread runs
     * @param namePrefix the threads' name prefix
     * @param count how many threads
     */
    void startThreads(Runnable body, String namePrefix, int count);

    /** @return the number of open device buffers in the runtime (both languages) */
    long liveBuffers();

    /** @return the Python package version and backend versions, for reports */
    String version();

    /**
     * Wraps a direct, native-order ByteBuffer as a 1-d host array view without copying and
     * returns its address; used by tests and benchmarks to prove zero-copy paths.
     *
     * @param buffer a direct, native-order ByteBuffer
     * @return the address NumPy sees for its position
     */
    long hostAddress(ByteBuffer buffer);
}
