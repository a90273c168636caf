package io.isthmus;

/**
 * Which operands {@link Ops#gemm(DeviceBuffer, DeviceBuffer, Transpose)} reads transposed: with
 * {@code B}, a right operand stored n x k (row-major weights) gives {@code a @ b.T} without a
 * transpose kernel; with {@code A}, a left operand stored k x m gives {@code a.T @ b}.
 *
 * <pre>{@code
 * try (DeviceBuffer y = Ops.gemm(x, weights, Transpose.B)) { ... }   // x @ weights.T
 * }</pre>
 */
public enum Transpose {
    /** {@code a @ b} */
    NONE(false, false),
    /** {@code a.T @ b} */
    A(true, false),
    /** {@code a @ b.T} */
    B(false, true),
    /** {@code a.T @ b.T} */
    BOTH(true, true);

    private final boolean a;
    private final boolean b;

    Transpose(boolean a, boolean b) {
        this.a = a;
        this.b = b;
    }

    /** @return whether the left operand is read transposed */
    public boolean a() {
        return a;
    }

    /** @return whether the right operand is read transposed */
    public boolean b() {
        return b;
    }
}
