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
     * @param a left matrix (m x k), or a batch of them (batch x m x k)
     * @param b right matrix (k x n), or a batch of them (batch x k x n); a 2-d operand next to a
     *          3-d one is shared by every batch entry
     * @return {@code a @ b} as a new m x n (batch x m x n) buffer
     */
    public static DeviceBuffer gemm(DeviceBuffer a, DeviceBuffer b) {
        return gemm(a, b, Transpose.NONE);
    }

    /**
     * {@code op(a) @ op(b)}, where {@code transpose} says which operands are read transposed
     * ({@code Transpose.B}: {@code b} stored n x k, as row-major weights are). 3-d operands are
     * batched over their leading dimension in one launch.
     *
     * @param a left operand (m x k, or k x m when transposed; optionally with a leading batch dimension)
     * @param b right operand (k x n, or n x k when transposed; optionally with a leading batch dimension)
     * @param transpose which operands are transposed
     * @return a new m x n (batch x m x n) buffer
     */
    public static DeviceBuffer gemm(DeviceBuffer a, DeviceBuffer b, Transpose transpose) {
        return gemm(a, b, null, 1.0, 0.0, transpose);
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
        return gemm(a, b, c, alpha, beta, Transpose.NONE);
    }

    /**
     * {@code alpha * op(a) @ op(b) + beta * c}, batched over a leading dimension when the operands are 3-d.
     *
     * @param a left operand (m x k, or k x m with {@code Transpose.A}/{@code BOTH}; optionally batched)
     * @param b right operand (k x n, or n x k with {@code Transpose.B}/{@code BOTH}; optionally batched)
     * @param c accumulator (m x n, or batch x m x n), or {@code null} when {@code beta} is 0
     * @param alpha scale of the product
     * @param beta scale of {@code c}
     * @param transpose which operands are transposed
     * @return a new buffer, or {@code c} itself when given
     */
    public static DeviceBuffer gemm(DeviceBuffer a, DeviceBuffer b, DeviceBuffer c, double alpha, double beta,
                                    Transpose transpose) {
        if (transpose == null) {
            throw new InvalidArgumentException("transpose must not be null (use Transpose.NONE)", null, null);
        }
        BufferHandle ch = c == null ? null : c.handle();
        BufferHandle r = Isthmus.get().runtime().gemm(h(a, "a"), h(b, "b"), ch, alpha, beta, transpose.a(),
                                                       transpose.b());
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
