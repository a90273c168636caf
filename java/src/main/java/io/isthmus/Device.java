package io.isthmus;

import io.isthmus.spi.DeviceHandle;

import java.nio.ByteBuffer;
import java.util.Map;

/**
 * One compute device (a CUDA GPU, an OpenCL GPU, or PoCL on the CPU) of the attached runtime;
 * the same device that Python's {@code isthmus.device(id)} returns. Devices are compared by
 * {@link #id()}.
 *
 * <pre>{@code
 * Device dev = Isthmus.get().device("opencl:0");
 * try (DeviceBuffer a = dev.fromArray(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
 *     dev.synchronize();
 * }
 * }</pre>
 */
public final class Device {
    private final DeviceHandle handle;
    private final String id;

    Device(DeviceHandle handle) {
        this.handle = handle;
        this.id = handle.id();
    }

    DeviceHandle handle() {
        return handle;
    }

    /** @return the device id, e.g. {@code "opencl:0"} or {@code "cuda:0"} */
    public String id() {
        return id;
    }

    /** @return the device name reported by the driver */
    public String name() {
        return handle.name();
    }

    /** @return the vendor name reported by the driver */
    public String vendor() {
        return handle.vendor();
    }

    /** @return {@code "opencl"} or {@code "cuda"} */
    public String backend() {
        return handle.backend();
    }

    /** @return device memory in bytes */
    public long memory() {
        return handle.memory();
    }

    /**
     * Device memory this process holds on the device through isthmus (both languages), for leak
     * checks: it returns to its starting value once every buffer is released.
     *
     * @return bytes in use
     */
    public long memoryInUse() {
        return handle.memoryInUse();
    }

    /**
     * Hands the device's cached free memory back to the driver: freed buffers are kept for the next
     * allocation of their size (CuPy's pool on CUDA, isthmus' cache on OpenCL). Buffers still open
     * keep their memory and contents, and {@link #memoryInUse()} does not change.
     */
    public void freePool() {
        handle.freePool();
    }

    /** @return number of compute units (SMs, CUs, or CPU cores) */
    public int computeUnits() {
        return handle.computeUnits();
    }

    /** @return largest work-group size the device accepts */
    public long maxWorkGroupSize() {
        return handle.maxWorkGroupSize();
    }

    /**
     * @param dtype element type
     * @param shape dimensions (none for a scalar)
     * @return a new, uninitialized buffer
     */
    public DeviceBuffer allocate(DType dtype, long... shape) {
        requireDtype(dtype);
        long[] s = Shapes.checked(shape);
        Releases.drain();
        return DeviceBuffer.wrap(handle.allocate(dtype.pythonName(), s), s, dtype);
    }

    /**
     * Copies a {@code float[]} to a new {@link DType#FLOAT32} buffer (one host copy).
     *
     * @param data the elements, row-major
     * @param shape dimensions; none means 1-d of {@code data.length}
     * @return the new buffer
     */
    public DeviceBuffer fromArray(float[] data, long... shape) {
        return fromPrimitive(data, nonNull(data).length, shape, DType.FLOAT32);
    }

    /**
     * Copies a {@code double[]} to a new {@link DType#FLOAT64} buffer (one host copy).
     *
     * @param data the elements, row-major
     * @param shape dimensions; none means 1-d of {@code data.length}
     * @return the new buffer
     */
    public DeviceBuffer fromArray(double[] data, long... shape) {
        return fromPrimitive(data, nonNull(data).length, shape, DType.FLOAT64);
    }

    /**
     * Copies an {@code int[]} to a new {@link DType#INT32} buffer (one host copy).
     *
     * @param data the elements, row-major
     * @param shape dimensions; none means 1-d of {@code data.length}
     * @return the new buffer
     */
    public DeviceBuffer fromArray(int[] data, long... shape) {
        return fromPrimitive(data, nonNull(data).length, shape, DType.INT32);
    }

    /**
     * Copies a {@code long[]} to a new {@link DType#INT64} buffer (one host copy).
     *
     * @param data the elements, row-major
     * @param shape dimensions; none means 1-d of {@code data.length}
     * @return the new buffer
     */
    public DeviceBuffer fromArray(long[] data, long... shape) {
        return fromPrimitive(data, nonNull(data).length, shape, DType.INT64);
    }

    private DeviceBuffer fromPrimitive(Object data, int length, long[] shape, DType dtype) {
        long[] s = Shapes.forArray(length, shape);
        Releases.drain();
        return DeviceBuffer.wrap(handle.fromArray(data, s), s, dtype);
    }

    private static <T> T nonNull(T data) {
        if (data == null) {
            throw new InvalidArgumentException("data must not be null");
        }
        return data;
    }

    /**
     * Copies host bytes (from the buffer's position to its limit) to a new device buffer; the
     * host side is read in place, with no host copy.
     *
     * @param data a direct ByteBuffer in native byte order
     * @param dtype element type
     * @param shape dimensions; none means 1-d of {@code remaining / dtype.size()}
     * @return the new buffer
     */
    public DeviceBuffer fromBuffer(ByteBuffer data, DType dtype, long... shape) {
        requireDtype(dtype);
        Shapes.checkDirect(data, "data");
        long[] s = shape == null || shape.length == 0
                ? new long[] {data.remaining() / dtype.size()} : Shapes.checked(shape);
        long bytes = Shapes.count(s) * dtype.size();
        if (bytes != data.remaining()) {
            throw new InvalidArgumentException("shape " + java.util.Arrays.toString(s) + " of " + dtype
                    + " needs " + bytes + " bytes but the buffer has " + data.remaining() + " remaining");
        }
        Releases.drain();
        return DeviceBuffer.wrap(handle.fromBuffer(data, dtype.pythonName(), s), s, dtype);
    }

    /**
     * Host memory for fast transfers: a direct, native-order ByteBuffer over memory that the
     * runtime allocated ({@code Device.empty_host} in Python), page-locked where the backend
     * offers it. Python views the same bytes with no copy; the memory lives until the
     * ByteBuffer is garbage-collected.
     *
     * @param dtype element type
     * @param shape dimensions
     * @return the buffer, positioned at 0 with limit = capacity = the array's size in bytes
     */
    public ByteBuffer allocateHost(DType dtype, long... shape) {
        requireDtype(dtype);
        return handle.allocateHost(dtype.pythonName(), Shapes.checked(shape));
    }

    /**
     * @param name an op of the isthmus library, e.g. {@code "softmax"}, or one registered in Python
     *     ({@code isthmus.ops.registry.register})
     * @return the op bound to this device, launched with {@link LibraryKernel#launch(Object...)}
     * @throws InvalidArgumentException if no op is registered under {@code name}
     */
    public LibraryKernel library(String name) {
        if (name == null) {
            throw new InvalidArgumentException("library kernel name must not be null");
        }
        return new LibraryKernel(handle.op(name), this);
    }

    /**
     * Compiles OpenCL C source (cached on disk by the runtime).
     *
     * @param source OpenCL C source
     * @param kernelName the {@code __kernel} function to bind
     * @param defines preprocessor macros ({@code -DNAME=value}; {@code value.toString()}), may be {@code null}
     * @return the kernel, launched with {@link Kernel#launch(LaunchConfig, Object...)}
     * @throws CompileException with the build log if the source does not compile
     */
    public Kernel compile(String source, String kernelName, Map<String, ?> defines) {
        if (source == null || kernelName == null) {
            throw new InvalidArgumentException("source and kernelName must not be null");
        }
        int n = defines == null ? 0 : defines.size();
        String[] names = new String[n];
        String[] values = new String[n];
        if (defines != null) {
            int i = 0;
            for (Map.Entry<String, ?> e : defines.entrySet()) {
                if (e.getKey() == null) {
                    throw new InvalidArgumentException("define names must not be null");
                }
                names[i] = e.getKey();
                values[i] = e.getValue() == null ? null : e.getValue().toString();
                i++;
            }
        }
        return new Kernel(handle.compile(source, kernelName, names, values), this);
    }

    /**
     * Records the kernel launches and device copies that {@code body} makes on this device (on
     * this thread) into a graph, replayed with {@link Graph#launch()}; nothing runs while recording.
     *
     * @param body the work to capture
     * @return the graph; close it to release the memory its launches hold
     */
    public Graph capture(Runnable body) {
        if (body == null) {
            throw new InvalidArgumentException("capture body must not be null");
        }
        return new Graph(handle.capture(body));
    }

    /**
     * Compiles an elementwise expression into one kernel for this device.
     *
     * @param expression e.g. {@code "out = a * x + b * tanh(y)"}
     * @return the fused kernel (cached per expression; compiled per input dtypes on first call)
     * @throws InvalidArgumentException naming the column of a malformed expression
     */
    public Fused fuse(String expression) {
        if (expression == null) {
            throw new InvalidArgumentException("expression must not be null");
        }
        return new Fused(handle.fuse(expression));
    }

    /** Waits until all work queued on this device has finished. */
    public void synchronize() {
        handle.synchronize();
    }

    private static void requireDtype(DType dtype) {
        if (dtype == null) {
            throw new InvalidArgumentException("dtype must not be null");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Device d && d.id.equals(id);
    }

    @Override
    public int hashCode() {
        return id.hashCode();
    }

    /** @return the device's id and driver name, e.g. {@code Device[opencl:0 pthread-skylake (PoCL)]} */
    @Override
    public String toString() {
        return "Device[" + id + " " + name() + " (" + vendor() + ")]";
    }
}
