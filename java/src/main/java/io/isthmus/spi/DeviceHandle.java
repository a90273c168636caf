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

    /**
     * @param dtype NumPy dtype name
     * @param shape dimensions
     * @return an uninitialized buffer
     */
    BufferHandle allocate(String dtype, long[] shape);

    /**
     * @param array a {@code float[]}, {@code double[]}, {@code int[]} or {@code long[]}
     * @param shape dimensions, holding exactly the array's elements
     * @return a buffer holding a copy of the array
     */
    BufferHandle fromArray(Object array, long[] shape);

    /**
     * @param data a direct, native-order buffer
     * @param dtype NumPy dtype name
     * @param shape dimensions
     * @return a buffer holding a copy of {@code data}'s bytes from its position to its limit
     */
    BufferHandle fromBuffer(ByteBuffer data, String dtype, long[] shape);

    /**
     * @param dtype NumPy dtype name
     * @param shape dimensions
     * @return a direct, native-order ByteBuffer over host memory that the runtime allocated
     *     (page-locked where offered)
     */
    ByteBuffer allocateHost(String dtype, long[] shape);

    /**
     * @param name a library op, e.g. {@code "softmax"}
     * @return the op bound to this device
     */
    OpHandle op(String name);

    /**
     * @param source OpenCL C source
     * @param kernelName the {@code __kernel} function
     * @param defineNames macro names
     * @param defineValues their values: {@code defineNames[i]} is defined to {@code defineValues[i]}
     * @return the compiled kernel
     */
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
