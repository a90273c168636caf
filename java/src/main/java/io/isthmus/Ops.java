package io.isthmus;

import io.isthmus.spi.BufferHandle;

/**
 * The library operations of {@code isthmus.ops}, on buffers of one device each; results are new
 * buffers on the inputs' device (close them).
 *
 * <pre>{@code
 * try (DeviceBuffer scores = Ops.gemm(queries, Ops.transpose(matrix));
 *      DeviceBuffer probs = Ops.softmax(scores)) {
 *     float[] p = probs.toFloatArray();
 * }
 * }</pre>
 */
public final class Ops {
    private Ops() {
    }

    /**
     * In place: {@code y = a * x + y}.
     *
     * @param a scale
     * @param x input
     * @param y input and output, same shape and dtype as {@code x}
     */
    public static void axpy(double a, DeviceBuffer x, DeviceBuffer y) {
        Isthmus.get().runtime().axpy(a, h(x, "x"), h(y, "y"));
    }

    /**
     * @param x input
     * @return a one-element buffer with the sum of all elements
     */
    public static DeviceBuffer sum(DeviceBuffer x) {
        return wrap(Isthmus.get().runtime().sum(h(x, "x")));
    }

    /**
     * @param x input
     * @return a one-element buffer with the largest element
     */
    public static DeviceBuffer max(DeviceBuffer x) {
        return wrap(Isthmus.get().runtime().max(h(x, "x")));
    }

    /**
     * As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0.
     *
     * @param x input, softmax taken along the last axis
     * @return a new buffer of the same shape
     */
    public static DeviceBuffer softmax(DeviceBuffer x) {
        return wrap(Isthmus.get().runtime().softmax(h(x, "x")));
    }

    /**
     * @param x a 2-d buffer
     * @return its transpose as a new buffer
     */
    public static DeviceBuffer transpose(DeviceBuffer x) {
        return wrap(Isthmus.get().runtime().transpose(h(x, "x")));
    }

    /**
     * @param a left matrix (m x k)
     * @param b right matrix (k x n)
     * @return {@code a @ b} as a new m x n buffer
     */
    public static DeviceBuffer gemm(DeviceBuffer a, DeviceBuffer b) {
        return wrap(Isthmus.get().runtime().gemm(h(a, "a"), h(b, "b"), null, 1.0, 0.0));
    }

    /**
     * @param a left matrix (m x k)
     * @param b right matrix (k x n)
     * @param c accumulator (m x n), or {@code null} when {@code beta} is 0
     * @param alpha scale of {@code a @ b}
     * @param beta scale of {@code c}
     * @return {@code alpha * a @ b + beta * c}: a new buffer, or {@code c} itself when the runtime updates it in place
     */
    public static DeviceBuffer gemm(DeviceBuffer a, DeviceBuffer b, DeviceBuffer c, double alpha, double beta) {
        BufferHandle ch = c == null ? null : c.handle();
        BufferHandle r = Isthmus.get().runtime().gemm(h(a, "a"), h(b, "b"), ch, alpha, beta);
        return r == ch ? c : wrap(r);
    }

    private static BufferHandle h(DeviceBuffer b, String name) {
        if (b == null) {
            throw new InvalidArgumentException(name + " must not be null", null, null);
        }
        return b.handle();
    }

    private static DeviceBuffer wrap(BufferHandle r) {
        return r == null ? null : DeviceBuffer.wrap(r);
    }
}
