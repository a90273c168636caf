package io.isthmus.spi;

import java.nio.ByteBuffer;

/** One device of the runtime. */
public interface DeviceHandle {
    /** @return id such as {@code "opencl:0"} or {@code "cuda:0"} */
    String id();

    /** @return device name */
    String name();

    /** @return vendor name */
    String vendor();

    /** @return {@code "opencl"} or {@code "cuda"} */
    String backend();

    /** @return device memory in bytes */
    long memory();

    /** @return bytes of device memory this process holds on the device through isthmus */
    long memoryInUse();

    /** Hands the cached free memory of the device back to the driver. */
    void freePool();

    /** @return number of compute units */
    int computeUnits();

    /** @return largest work-group size */
    long maxWorkGroupSize();

    /** @return uninitialized buffer of the given dtype (NumPy name) and shape */
    BufferHandle allocate(String dtype, long[] shape);

    /** @return a buffer holding a copy of the primitive array ({@code float[]}, {@code double[]}, {@code int[]}, {@code long[]}) */
    BufferHandle fromArray(Object array, long[] shape);

    /** @return a buffer holding a copy of the direct, native-order buffer's bytes from its position to its limit */
    BufferHandle fromBuffer(ByteBuffer data, String dtype, long[] shape);

    /** @return a direct, native-order ByteBuffer over host memory that the runtime allocated (page-locked where offered) */
    ByteBuffer allocateHost(String dtype, long[] shape);

    /**
     * @param name a library op, e.g. {@code "softmax"}
     * @return the op bound to this device
     */
    OpHandle op(String name);

    /**
     * @param libraryName a library op
     * @return a kernel handle whose launches without a grid run the op
     * @deprecated use {@link #op(String)}: a {@link KernelHandle} is a compiled kernel on a grid
     */
    @Deprecated
    KernelHandle kernel(String libraryName);

    /** @return a compiled kernel; {@code defineNames[i]} is defined to {@code defineValues[i]} */
    KernelHandle compile(String source, String kernelName, String[] defineNames, String[] defineValues);

    /** Waits until all work queued on this device finished. */
    void synchronize();

    /**
     * Records the launches and device copies that {@code body} makes on this device (on the calling
     * thread) into a graph; nothing runs while recording.
     *
     * @param body the work to capture
     * @return the captured graph
     */
    GraphHandle capture(Runnable body);

    /**
     * @param expression an elementwise expression such as {@code "out = a * x + b * tanh(y)"}
     * @return the expression compiled for this device (cached per expression and dtypes)
     */
    FusedHandle fuse(String expression);
}
