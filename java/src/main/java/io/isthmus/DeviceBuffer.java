package io.isthmus;

import io.isthmus.spi.BufferHandle;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Device memory: a handle on a runtime buffer, the same allocation that Python's
 * {@code isthmus.Buffer} owns ({@code isthmus.java.to_java} / {@code from_java} convert
 * between the two without copying).
 *
 * <p>GPU memory is invisible to the garbage collector: close buffers explicitly, best with
 * try-with-resources. {@link #close()} releases this handle; the allocation is freed once
 * neither language holds it. Any use after close throws {@link ClosedBufferException}. A
 * buffer that is never closed is released by a {@link Cleaner} backstop some time after it
 * becomes unreachable.
 *
 * <pre>{@code
 * try (DeviceBuffer x = dev.fromArray(new float[] {1, 2, 3})) {
 *     float[] back = x.toFloatArray();
 * }
 * }</pre>
 */
public final class DeviceBuffer implements AutoCloseable {
    /** Lazily started, so loading the class starts no thread. */
    private static final class Backstop {
        static final Cleaner CLEANER = Cleaner.create();
    }

    /** What the Cleaner needs; never refers back to the DeviceBuffer. */
    private static final class State implements Runnable {
        final BufferHandle handle;
        private boolean closed;

        State(BufferHandle handle) {
            this.handle = handle;
        }

        synchronized boolean isClosed() {
            return closed;
        }

        synchronized boolean markClosed() {
            boolean was = closed;
            closed = true;
            return !was;
        }

        @Override
        public void run() {
            // Cleaner thread: only queue the release (see Releases)
            if (markClosed()) {
                Releases.enqueue(handle);
            }
        }
    }

    private final State state;
    private final Cleaner.Cleanable cleanable;
    private final long[] shape;
    private final DType dtype;

    private DeviceBuffer(BufferHandle handle, long[] shape, DType dtype) {
        this.state = new State(handle);
        this.shape = shape;
        this.dtype = dtype;
        this.cleanable = Backstop.CLEANER.register(this, state);
    }

    static DeviceBuffer wrap(BufferHandle handle) {
        if (handle == null) {
            throw new InvalidArgumentException("buffer handle must not be null");
        }
        return new DeviceBuffer(handle, handle.shape(), DType.fromPythonName(handle.dtype()));
    }

    /**
     * A buffer whose shape and dtype the caller already knows (no crossing to ask for them).
     *
     * @param handle the runtime's handle
     * @param shape its shape; the buffer keeps this array, so pass one nobody else changes
     * @param dtype its dtype
     */
    static DeviceBuffer wrap(BufferHandle handle, long[] shape, DType dtype) {
        if (handle == null) {
            throw new InvalidArgumentException("buffer handle must not be null");
        }
        return new DeviceBuffer(handle, shape, dtype);
    }

    BufferHandle handle() {
        if (state.isClosed()) {
            throw new ClosedBufferException("DeviceBuffer " + describe() + " is closed");
        }
        return state.handle;
    }

    /** @return a copy of the shape */
    public long[] shape() {
        return shape.clone();
    }

    /** @return the element type */
    public DType dtype() {
        return dtype;
    }

    /** @return number of elements */
    public long size() {
        return Shapes.count(shape);
    }

    /** @return size in bytes */
    public long nbytes() {
        return size() * dtype.size();
    }

    /** @return the device holding this buffer */
    public Device device() {
        return new Device(handle().device());
    }

    /**
     * The device pointer (CUDA) or memory-object handle (OpenCL); equal values in Java and
     * Python mean the same allocation. For identity only.
     *
     * @return the pointer
     */
    public long pointer() {
        return handle().pointer();
    }

    /** @return whether {@link #close()} was called (or the Cleaner released it) */
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * Host to device from a {@code float[]} (one host copy); requires {@link DType#FLOAT32}.
     *
     * @param data exactly {@link #size()} elements
     */
    public void copyFrom(float[] data) {
        copyFromArray(data, data == null ? -1 : data.length, DType.FLOAT32);
    }

    /**
     * Host to device from a {@code double[]} (one host copy); requires {@link DType#FLOAT64}.
     *
     * @param data exactly {@link #size()} elements
     */
    public void copyFrom(double[] data) {
        copyFromArray(data, data == null ? -1 : data.length, DType.FLOAT64);
    }

    /**
     * Host to device from an {@code int[]} (one host copy); requires {@link DType#INT32}.
     *
     * @param data exactly {@link #size()} elements
     */
    public void copyFrom(int[] data) {
        copyFromArray(data, data == null ? -1 : data.length, DType.INT32);
    }

    /**
     * Host to device from a {@code long[]} (one host copy); requires {@link DType#INT64}.
     *
     * @param data exactly {@link #size()} elements
     */
    public void copyFrom(long[] data) {
        copyFromArray(data, data == null ? -1 : data.length, DType.INT64);
    }

    /**
     * Host to device from a direct, native-order ByteBuffer, read in place from its position
     * (no host copy); it must have exactly {@link #nbytes()} bytes remaining.
     *
     * @param data the source
     */
    public void copyFrom(ByteBuffer data) {
        Shapes.checkDirect(data, "source");
        if (data.remaining() != nbytes()) {
            throw new InvalidArgumentException("source has " + data.remaining() + " bytes remaining, "
                    + describe() + " needs exactly " + nbytes());
        }
        handle().copyFrom(data);
    }

    /**
     * Device to host into a direct, native-order ByteBuffer, written in place from its
     * position; the position is not moved.
     *
     * @param target at least {@link #nbytes()} bytes remaining
     */
    public void copyTo(ByteBuffer target) {
        Shapes.checkDirect(target, "target");
        if (target.isReadOnly()) {
            throw new InvalidArgumentException("target ByteBuffer is read-only");
        }
        if (target.remaining() < nbytes()) {
            throw new InvalidArgumentException("target has " + target.remaining() + " bytes remaining, "
                    + describe() + " needs " + nbytes());
        }
        handle().copyTo(target);
    }

    /**
     * @return the contents as a new {@code float[]}; for {@link DType#FLOAT32}, {@link DType#FLOAT16}
     *         and {@link DType#BFLOAT16} (widened exactly)
     */
    public float[] toFloatArray() {
        requireDtype("toFloatArray", DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16);
        return (float[]) handle().toArray("float");
    }

    /** @return the contents as a new {@code double[]}; for any floating dtype */
    public double[] toDoubleArray() {
        requireDtype("toDoubleArray", DType.FLOAT64, DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16);
        return (double[]) handle().toArray("double");
    }

    /** @return the contents as a new {@code int[]}; for {@link DType#INT32} and {@link DType#UINT8} */
    public int[] toIntArray() {
        requireDtype("toIntArray", DType.INT32, DType.UINT8);
        return (int[]) handle().toArray("int");
    }

    /** @return the contents as a new {@code long[]}; for any integer dtype */
    public long[] toLongArray() {
        requireDtype("toLongArray", DType.INT64, DType.INT32, DType.UINT8, DType.UINT64);
        return (long[]) handle().toArray("long");
    }

    /**
     * @param target a device (may be this buffer's own)
     * @return a new buffer with a copy of the contents on {@code target}
     */
    public DeviceBuffer to(Device target) {
        if (target == null) {
            throw new InvalidArgumentException("target device must not be null");
        }
        return wrap(handle().to(target.handle()), shape, dtype);
    }

    /** Releases this handle; idempotent. The allocation is freed once no language holds it. */
    @Override
    public void close() {
        if (state.markClosed()) {
            cleanable.clean(); // deregisters; State.run() is a no-op now
            state.handle.close();
        }
    }

    private void copyFromArray(Object data, int length, DType expected) {
        if (data == null) {
            throw new InvalidArgumentException("source array must not be null");
        }
        if (dtype != expected) {
            throw new InvalidArgumentException("cannot copy a " + expected.pythonName() + " array into "
                    + describe() + ": " + howToFill(dtype));
        }
        if (length != size()) {
            throw new InvalidArgumentException("source has " + length + " elements, " + describe()
                    + " holds " + size());
        }
        handle().copyFrom(data);
    }

    private void requireDtype(String method, DType... allowed) {
        for (DType d : allowed) {
            if (d == dtype) {
                return;
            }
        }
        throw new InvalidArgumentException(method + "() needs one of " + Arrays.toString(allowed)
                + " but " + describe() + " is " + dtype);
    }

    private static String howToFill(DType d) {
        return switch (d) {
            case FLOAT32 -> "use a float[] (or a ByteBuffer)";
            case FLOAT64 -> "use a double[] (or a ByteBuffer)";
            case INT32, UINT8 -> "use an int[] (or a ByteBuffer)";
            case INT64 -> "use a long[] (or a ByteBuffer)";
            case UINT64 -> "fill a direct native-order ByteBuffer with its 8-byte values (putLong) and use "
                    + "copyFrom(ByteBuffer)";
            case FLOAT16, BFLOAT16 -> "fill a direct native-order ByteBuffer with its 2-byte patterns"
                    + (d == DType.BFLOAT16 ? " (DType.floatToBfloat16)" : "") + " and use copyFrom(ByteBuffer)";
        };
    }

    private String describe() {
        return "[" + dtype.pythonName() + " " + Arrays.toString(shape) + "]";
    }

    @Override
    public String toString() {
        return "DeviceBuffer" + describe() + (state.isClosed() ? " (closed)" : "");
    }
}
