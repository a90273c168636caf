package io.isthmus;

import java.util.HashMap;
import java.util.Map;

/**
 * The library operations of {@code isthmus.ops}, on buffers of one device each; results are new
 * buffers on the inputs' device (close them), or the {@code out} buffer given. Each call crosses
 * into the runtime once.
 *
 * <pre>{@code
 * try (DeviceBuffer scores = Ops.gemm(queries, Ops.transpose(matrix));
 *      DeviceBuffer probs = Ops.softmax(scores)) {
 *     float[] p = probs.toFloatArray();
 * }
 * Ops.softmax(scores, probs);   // into an existing buffer: no allocation per call
 * }</pre>
 */
public final class Ops {
    /** gemm's keyword arguments per {@link Transpose}, made once. */
    private static final Map<String, Object> TRANS_A = Map.of("trans_a", true);
    private static final Map<String, Object> TRANS_B = Map.of("trans_b", true);
    private static final Map<String, Object> TRANS_BOTH = Map.of("trans_a", true, "trans_b", true);

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
        OpCall.run("axpy", null, null, a, need(x, "x"), need(y, "y"));
    }

    /**
     * {@code alpha * x} as a new buffer of {@code x}'s shape and dtype (a float dtype).
     *
     * @param alpha the factor
     * @param x input
     * @return a new buffer
     */
    public static DeviceBuffer scale(double alpha, DeviceBuffer x) {
        return OpCall.run("scale", null, null, alpha, need(x, "x"));
    }

    /**
     * {@code alpha * x} into an existing buffer (no allocation per call).
     *
     * @param alpha the factor
     * @param x input
     * @param out a buffer of {@code x}'s shape and dtype; may be {@code x} itself
     * @return {@code out}
     */
    public static DeviceBuffer scale(double alpha, DeviceBuffer x, DeviceBuffer out) {
        return OpCall.run("scale", need(out, "out"), null, alpha, need(x, "x"));
    }

    /**
     * The sum of all elements, in NumPy's dtype for it: {@link DType#INT64} for {@code INT32},
     * {@link DType#UINT64} for {@code UINT8} (integer sums run in 64 bits), {@code x}'s dtype for
     * floats.
     *
     * @param x input
     * @return a one-element buffer with the sum of all elements
     */
    public static DeviceBuffer sum(DeviceBuffer x) {
        return OpCall.run("sum", null, null, need(x, "x"));
    }

    /**
     * @param x input
     * @param out a one-element buffer of the sum's dtype (see {@link #sum(DeviceBuffer)}) to write it into
     * @return {@code out}
     */
    public static DeviceBuffer sum(DeviceBuffer x, DeviceBuffer out) {
        return OpCall.run("sum", need(out, "out"), null, need(x, "x"));
    }

    /**
     * @param x input, not empty
     * @return a one-element buffer with the largest element
     */
    public static DeviceBuffer max(DeviceBuffer x) {
        return OpCall.run("max", null, null, need(x, "x"));
    }

    /**
     * @param x input, not empty
     * @param out a one-element buffer of {@code x}'s dtype to write the maximum into
     * @return {@code out}
     */
    public static DeviceBuffer max(DeviceBuffer x, DeviceBuffer out) {
        return OpCall.run("max", need(out, "out"), null, need(x, "x"));
    }

    /**
     * As NumPy and torch: a NaN or +inf anywhere in a row gives a row of NaN, -inf gives 0.
     *
     * @param x input, softmax taken along the last axis
     * @return a new buffer of the same shape
     */
    public static DeviceBuffer softmax(DeviceBuffer x) {
        return OpCall.run("softmax", null, null, need(x, "x"));
    }

    /**
     * Softmax into an existing buffer (no allocation per call).
     *
     * @param x input, softmax taken along the last axis
     * @param out a buffer of {@code x}'s shape and dtype; may be {@code x} itself
     * @return {@code out}
     */
    public static DeviceBuffer softmax(DeviceBuffer x, DeviceBuffer out) {
        return OpCall.run("softmax", need(out, "out"), null, need(x, "x"));
    }

    // ---- rmsnorm (isthmus.ops.rmsnorm) ----

    /**
     * RMS norm over the last dimension: {@code x / sqrt(mean(x^2) + eps) * weight}, in float32
     * arithmetic for 16-bit dtypes, as a new buffer of {@code x}'s shape and dtype.
     *
     * @param x input, any number of leading dimensions
     * @param weight {@code x.shape[-1]} elements of {@code x}'s dtype
     * @param eps added to the mean square, {@code >= 0} (Llama: 1e-6 or 1e-5)
     * @return a new buffer
     */
    public static DeviceBuffer rmsnorm(DeviceBuffer x, DeviceBuffer weight, double eps) {
        return OpCall.run("rmsnorm", null, null, need(x, "x"), need(weight, "weight"), eps);
    }

    /**
     * {@link #rmsnorm(DeviceBuffer, DeviceBuffer, double)} into an existing buffer.
     *
     * @param x input
     * @param weight {@code x.shape[-1]} elements
     * @param eps added to the mean square, {@code >= 0}
     * @param out a buffer of {@code x}'s shape and dtype; may be {@code x} itself
     * @return {@code out}
     */
    public static DeviceBuffer rmsnorm(DeviceBuffer x, DeviceBuffer weight, double eps, DeviceBuffer out) {
        return OpCall.run("rmsnorm", need(out, "out"), null, need(x, "x"), need(weight, "weight"), eps);
    }

    /**
     * The fused add and norm of a transformer block: {@code residual += x} in place (rounded to the
     * dtype), and the RMS norm of that sum returned.
     *
     * <pre>{@code
     * Ops.rmsnorm(hidden, weight, 1e-6, residual, hidden);   // residual += hidden; hidden = norm(residual)
     * }</pre>
     *
     * @param x input
     * @param weight {@code x.shape[-1]} elements
     * @param eps added to the mean square, {@code >= 0}
     * @param residual a buffer of {@code x}'s shape and dtype, updated in place; sharing memory with
     *     no other argument; {@code null}: no residual add
     * @param out the result's buffer (may be {@code x}), or {@code null} for a new one
     * @return {@code out}, or a new buffer
     */
    public static DeviceBuffer rmsnorm(DeviceBuffer x, DeviceBuffer weight, double eps, DeviceBuffer residual,
                                       DeviceBuffer out) {
        return rmsnorm(x, weight, eps, residual, 0.0, out);
    }

    /**
     * RMS norm with every option: {@code s / sqrt(mean(s^2) + eps) * (offset + weight)}, where
     * {@code s} is {@code x}, or {@code residual + x} stored into {@code residual} when one is given.
     * {@code offset = 1} is Gemma's {@code (1 + weight)}.
     *
     * @param x input
     * @param weight {@code x.shape[-1]} elements
     * @param eps added to the mean square, {@code >= 0}
     * @param residual updated in place ({@code residual += x}), or {@code null}
     * @param offset added to every weight (0: plain; 1: Gemma)
     * @param out the result's buffer (may be {@code x}), or {@code null} for a new one
     * @return {@code out}, or a new buffer
     */
    public static DeviceBuffer rmsnorm(DeviceBuffer x, DeviceBuffer weight, double eps, DeviceBuffer residual,
                                       double offset, DeviceBuffer out) {
        Map<String, Object> options = offset == 0.0 ? null : Map.of("offset", offset);
        if (residual == null) {
            return OpCall.run("rmsnorm", out, options, need(x, "x"), need(weight, "weight"), eps);
        }
        return OpCall.run("rmsnorm", out, options, need(x, "x"), need(weight, "weight"), eps, residual);
    }

    // ---- layernorm (isthmus.ops.layernorm) ----

    /**
     * Layer norm over the last dimension: {@code (x - mean) / sqrt(var + eps) * weight + bias} (the
     * biased variance, as torch's), in float32 arithmetic for 16-bit dtypes, as a new buffer.
     *
     * @param x input, any number of leading dimensions
     * @param weight {@code x.shape[-1]} elements, or {@code null} (the plain form: 1)
     * @param bias {@code x.shape[-1]} elements, or {@code null} (0)
     * @param eps added to the variance, {@code >= 0} (torch: 1e-5)
     * @return a new buffer
     */
    public static DeviceBuffer layernorm(DeviceBuffer x, DeviceBuffer weight, DeviceBuffer bias, double eps) {
        return layernorm(x, weight, bias, eps, null, null);
    }

    /**
     * {@link #layernorm(DeviceBuffer, DeviceBuffer, DeviceBuffer, double)} into an existing buffer.
     *
     * @param x input
     * @param weight {@code x.shape[-1]} elements, or {@code null}
     * @param bias {@code x.shape[-1]} elements, or {@code null}
     * @param eps added to the variance, {@code >= 0}
     * @param out a buffer of {@code x}'s shape and dtype; may be {@code x} itself
     * @return {@code out}
     */
    public static DeviceBuffer layernorm(DeviceBuffer x, DeviceBuffer weight, DeviceBuffer bias, double eps,
                                         DeviceBuffer out) {
        return layernorm(x, weight, bias, eps, null, need(out, "out"));
    }

    /**
     * The fused add and layer norm of a transformer block: {@code residual += x} in place (rounded
     * to the dtype), and the layer norm of that sum.
     *
     * @param x input
     * @param weight {@code x.shape[-1]} elements, or {@code null}
     * @param bias {@code x.shape[-1]} elements, or {@code null}
     * @param eps added to the variance, {@code >= 0}
     * @param residual updated in place ({@code residual += x}), sharing memory with no other
     *     argument; {@code null}: no residual add
     * @param out the result's buffer (may be {@code x}), or {@code null} for a new one
     * @return {@code out}, or a new buffer
     */
    public static DeviceBuffer layernorm(DeviceBuffer x, DeviceBuffer weight, DeviceBuffer bias, double eps,
                                         DeviceBuffer residual, DeviceBuffer out) {
        need(x, "x");
        if (weight != null && bias != null && residual == null) {
            return OpCall.run("layernorm", out, null, x, weight, bias, eps);
        }
        Map<String, Object> options = new HashMap<>();   // (an absent tensor is left out: its default, None)
        options.put("eps", eps);
        if (weight != null) {
            options.put("weight", weight.handle());
        }
        if (bias != null) {
            options.put("bias", bias.handle());
        }
        if (residual != null) {
            options.put("residual", residual.handle());
        }
        return OpCall.run("layernorm", out, options, x);
    }

    /**
     * @param x a 2-d buffer
     * @return its transpose as a new buffer
     */
    public static DeviceBuffer transpose(DeviceBuffer x) {
        return OpCall.run("transpose", null, null, need(x, "x"));
    }

    /**
     * Transpose into an existing buffer (no allocation per call).
     *
     * @param x a 2-d buffer (rows x cols)
     * @param out a cols x rows buffer of {@code x}'s dtype, not {@code x}
     * @return {@code out}
     */
    public static DeviceBuffer transpose(DeviceBuffer x, DeviceBuffer out) {
        return OpCall.run("transpose", need(out, "out"), null, need(x, "x"));
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
     * @return {@code alpha * a @ b + beta * c}: a new buffer, or {@code c} itself when given
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
            throw new InvalidArgumentException("transpose must not be null (use Transpose.NONE)");
        }
        Map<String, Object> options = switch (transpose) {
            case NONE -> null;
            case A -> TRANS_A;
            case B -> TRANS_B;
            case BOTH -> TRANS_BOTH;
        };
        // c crosses as gemm's own positional parameter, so a given c comes back as itself
        if (c != null) {
            return OpCall.run("gemm", null, options, need(a, "a"), need(b, "b"), c, alpha, beta);
        }
        if (alpha == 1.0 && beta == 0.0) {
            return OpCall.run("gemm", null, options, need(a, "a"), need(b, "b"));
        }
        Map<String, Object> scaled = new HashMap<>(options == null ? Map.of() : options);
        scaled.put("alpha", alpha);
        scaled.put("beta", beta);
        return OpCall.run("gemm", null, scaled, need(a, "a"), need(b, "b"));
    }

    // ---- transformer building blocks (issue 27): rope, siluMul, geluMul, embedding -------------

    /**
     * Rotary position embedding's settings: the base {@code theta}, the layout, the rotated part of
     * each head and Hugging Face's {@code rope_scaling} dict (as a model's config.json writes it).
     *
     * <pre>{@code
     * Ops.Rope llama31 = Ops.Rope.theta(500000).scaling(Map.of("rope_type", "llama3", "factor", 8.0,
     *         "low_freq_factor", 1.0, "high_freq_factor", 4.0, "original_max_position_embeddings", 8192));
     * Ops.rope(q, k, positions, llama31);
     * }</pre>
     *
     * @param theta the frequencies' base (10000 in Llama 2, 500000 in Llama 3)
     * @param interleaved GPT-J's pairs (2i, 2i+1) instead of the half split (i, i + rotaryDim/2)
     * @param rotaryDim the rotated leading part of each head (even), 0 for the whole head
     * @param scaling Hugging Face's rope_scaling ({@code rope_type} llama3, linear, default), or null
     */
    public record Rope(double theta, boolean interleaved, int rotaryDim, Map<String, ?> scaling) {
        /** Llama's defaults: theta 10000, half split, whole heads, no scaling. */
        public static final Rope DEFAULT = new Rope(10000.0, false, 0, null);

        /**
         * @param theta the frequencies' base
         * @return the defaults with this base
         */
        public static Rope theta(double theta) {
            return new Rope(theta, false, 0, null);
        }

        /**
         * @param on GPT-J's interleaved pairs
         * @return these settings with that layout
         */
        public Rope interleaved(boolean on) {
            return new Rope(theta, on, rotaryDim, scaling);
        }

        /**
         * @param dim the rotated leading part of each head (even), 0 for the whole head
         * @return these settings with that rotary dimension
         */
        public Rope rotaryDim(int dim) {
            return new Rope(theta, interleaved, dim, scaling);
        }

        /**
         * @param ropeScaling Hugging Face's rope_scaling dict, or null
         * @return these settings with that scaling
         */
        public Rope scaling(Map<String, ?> ropeScaling) {
            return new Rope(theta, interleaved, rotaryDim, ropeScaling);
        }

        Map<String, Object> options(DeviceBuffer k) {
            Map<String, Object> o = new HashMap<>();
            o.put("theta", theta);
            o.put("interleaved", interleaved);
            if (rotaryDim != 0) {
                o.put("rotary_dim", rotaryDim);
            }
            if (scaling != null) {
                o.put("rope_scaling", scaling);
            }
            if (k != null) {
                o.put("k", k.handle());
            }
            return o;
        }
    }

    /** gelu's form in {@link #geluMul}: torch's {@code approximate="tanh"} or {@code "none"} (erf). */
    public enum GeluApproximate {
        /** 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))). */
        TANH,
        /** 0.5 g (1 + erf(g / sqrt 2)). */
        NONE;

        Map<String, Object> options() {
            return Map.of("approximate", this == TANH ? "tanh" : "none");
        }
    }

    /**
     * Rotary position embedding in place with Llama's defaults ({@link Rope#DEFAULT}).
     *
     * @param x (tokens, heads, headDim) or (batch, seq, heads, headDim), float32/float16/bfloat16
     * @param positions int32/int64 positions of shape x.shape[:-2] (or (seq) for a 4-d x)
     * @return {@code x}
     */
    public static DeviceBuffer rope(DeviceBuffer x, DeviceBuffer positions) {
        return rope(x, null, positions, Rope.DEFAULT);
    }

    /**
     * Rotary position embedding of {@code x} in place.
     *
     * @param x (tokens, heads, headDim) or (batch, seq, heads, headDim)
     * @param positions int32/int64 positions of shape x.shape[:-2] (or (seq) for a 4-d x)
     * @param rope the settings
     * @return {@code x}
     */
    public static DeviceBuffer rope(DeviceBuffer x, DeviceBuffer positions, Rope rope) {
        return rope(x, null, positions, rope);
    }

    /**
     * Rotary position embedding of q and k in place, in one launch (each with its own number of heads).
     *
     * @param q (tokens, heads, headDim) or (batch, seq, heads, headDim)
     * @param k q's shape but for its number of heads, or null for q alone
     * @param positions int32/int64 positions of shape q.shape[:-2] (or (seq) for a 4-d q)
     * @param rope the settings
     * @return {@code q}
     */
    public static DeviceBuffer rope(DeviceBuffer q, DeviceBuffer k, DeviceBuffer positions, Rope rope) {
        if (rope == null) {
            throw new InvalidArgumentException("rope must not be null (use Ops.Rope.DEFAULT)");
        }
        return OpCall.run("rope", null, rope.options(k), need(q, "q"), need(positions, "positions"));
    }

    /**
     * SwiGLU: {@code silu(gate) * up} as a new buffer.
     *
     * @param gate input
     * @param up input of gate's shape and dtype
     * @return a new buffer of gate's shape
     */
    public static DeviceBuffer siluMul(DeviceBuffer gate, DeviceBuffer up) {
        return OpCall.run("silu_mul", null, null, need(gate, "gate"), need(up, "up"));
    }

    /**
     * SwiGLU into an existing buffer.
     *
     * @param gate input
     * @param up input of gate's shape and dtype, or null when {@code gate} is one gate_up buffer
     * @param out a buffer of the result's shape and dtype
     * @return {@code out}
     */
    public static DeviceBuffer siluMul(DeviceBuffer gate, DeviceBuffer up, DeviceBuffer out) {
        return up == null ? OpCall.run("silu_mul", need(out, "out"), null, need(gate, "gate"))
                : OpCall.run("silu_mul", need(out, "out"), null, need(gate, "gate"), up);
    }

    /**
     * SwiGLU of one fused gate_up buffer: its last dimension holds the gate, then up.
     *
     * @param gateUp input, last dimension even
     * @return a new buffer, the last dimension halved
     */
    public static DeviceBuffer siluMul(DeviceBuffer gateUp) {
        return OpCall.run("silu_mul", null, null, need(gateUp, "gateUp"));
    }

    /**
     * GeGLU, tanh form: {@code gelu(gate) * up} as a new buffer.
     *
     * @param gate input
     * @param up input of gate's shape and dtype
     * @return a new buffer of gate's shape
     */
    public static DeviceBuffer geluMul(DeviceBuffer gate, DeviceBuffer up) {
        return OpCall.run("gelu_mul", null, null, need(gate, "gate"), need(up, "up"));
    }

    /**
     * GeGLU: {@code gelu(gate) * up}, gelu's form chosen, into {@code out} or a new buffer.
     *
     * @param gate input, or one gate_up buffer when {@code up} is null
     * @param up input of gate's shape and dtype, or null
     * @param approximate gelu's form
     * @param out a buffer of the result's shape and dtype, or null for a new one
     * @return {@code out}, or a new buffer
     */
    public static DeviceBuffer geluMul(DeviceBuffer gate, DeviceBuffer up, GeluApproximate approximate,
                                       DeviceBuffer out) {
        if (approximate == null) {
            throw new InvalidArgumentException("approximate must not be null (GeluApproximate.TANH or NONE)");
        }
        return up == null ? OpCall.run("gelu_mul", out, approximate.options(), need(gate, "gate"))
                : OpCall.run("gelu_mul", out, approximate.options(), need(gate, "gate"), up);
    }

    /**
     * The rows of {@code table} at {@code ids}; an id out of range is an {@link InvalidArgumentException}
     * naming it (its row is read clamped, never out of bounds). Waits for the device to read the check.
     *
     * @param ids int32/int64 ids of any shape
     * @param table (vocab, hidden)
     * @return a new buffer of shape ids.shape + (hidden), table's dtype
     */
    public static DeviceBuffer embedding(DeviceBuffer ids, DeviceBuffer table) {
        return OpCall.run("embedding", null, null, need(ids, "ids"), need(table, "table"));
    }

    /**
     * The rows of {@code table} at {@code ids} into {@code out}.
     *
     * @param ids int32/int64 ids of any shape
     * @param table (vocab, hidden)
     * @param out a buffer of shape ids.shape + (hidden) and table's dtype
     * @param check read the out-of-range flag after the launch (false: no wait, and what a
     *     captured graph needs; an out-of-range id reads its clamped row)
     * @return {@code out}
     */
    public static DeviceBuffer embedding(DeviceBuffer ids, DeviceBuffer table, DeviceBuffer out, boolean check) {
        return OpCall.run("embedding", need(out, "out"), check ? null : NO_CHECK, need(ids, "ids"), need(table, "table"));
    }

    private static final Map<String, Object> NO_CHECK = Map.of("check", false);
    // ---- losses: cross_entropy, fused_linear_cross_entropy (issue 27 item 5) ----

    /**
     * Softmax cross-entropy of each row of {@code logits} ({@code (..., C)}) against class indices,
     * averaged over the rows (as {@code torch.nn.functional.cross_entropy}, ignore index -100).
     *
     * @param logits the rows of scores, float32/float64/float16/bfloat16
     * @param targets int32 or int64 class indices, one per row (shaped as the leading dimensions)
     * @return a new one-element buffer of the logits' dtype
     * @throws InvalidArgumentException for a target out of range, shapes that disagree
     */
    public static DeviceBuffer crossEntropy(DeviceBuffer logits, DeviceBuffer targets) {
        return OpCall.run("cross_entropy", null, null, need(logits, "logits"), need(targets, "targets"));
    }

    /**
     * {@link #crossEntropy(DeviceBuffer, DeviceBuffer)} with every option of Python's
     * {@code isthmus.ops.cross_entropy}.
     *
     * @param logits the rows of scores
     * @param targets int32 or int64 class indices, one per row
     * @param ignoreIndex rows whose target is this count for nothing
     * @param labelSmoothing in [0, 1], as torch defines it
     * @param reduction "mean" (over the rows not ignored), "sum" or "none" (a loss per row)
     * @param zLoss the z-loss weight: {@code zLoss * lse^2} added to each row's loss
     * @return a new buffer: one element, or one per row for "none"
     */
    public static DeviceBuffer crossEntropy(DeviceBuffer logits, DeviceBuffer targets, long ignoreIndex,
                                            double labelSmoothing, String reduction, double zLoss) {
        return OpCall.run("cross_entropy", null, lossOptions(ignoreIndex, labelSmoothing, reduction, zLoss),
                          need(logits, "logits"), need(targets, "targets"));
    }

    /**
     * The loss and its gradient with respect to the logits, written into {@code gradOut} in the same
     * pass; {@code gradOut} may be {@code logits} itself (in place: no second buffer of the logits' size).
     *
     * @param logits the rows of scores
     * @param targets int32 or int64 class indices, one per row
     * @param ignoreIndex rows whose target is this count for nothing (and get a zero gradient)
     * @param labelSmoothing in [0, 1], as torch defines it
     * @param reduction "mean", "sum" or "none" (the gradient of the sum of the row losses)
     * @param zLoss the z-loss weight
     * @param gradOut the gradient's buffer: the logits' shape and dtype, or {@code logits}
     * @return a new buffer holding the loss
     */
    public static DeviceBuffer crossEntropy(DeviceBuffer logits, DeviceBuffer targets, long ignoreIndex,
                                            double labelSmoothing, String reduction, double zLoss,
                                            DeviceBuffer gradOut) {
        Map<String, Object> options = lossOptions(ignoreIndex, labelSmoothing, reduction, zLoss);
        options.put("grad", true);
        options.put("grad_out", need(gradOut, "gradOut").handle());
        return OpCall.run("cross_entropy", null, options, need(logits, "logits"), need(targets, "targets"));
    }

    /**
     * The cross-entropy of the logits {@code hidden @ weight.T (+ bias)} without materializing
     * them (the tokens run in chunks), as Python's {@code isthmus.ops.fused_linear_cross_entropy}.
     *
     * @param hidden (tokens, H)
     * @param weight (V, H), the same dtype
     * @param targets int32 or int64, (tokens)
     * @param bias (V), or {@code null}
     * @param ignoreIndex tokens whose target is this count for nothing
     * @param reduction "mean", "sum" or "none"
     * @return a new buffer holding the loss
     */
    public static DeviceBuffer fusedLinearCrossEntropy(DeviceBuffer hidden, DeviceBuffer weight,
                                                       DeviceBuffer targets, DeviceBuffer bias, long ignoreIndex,
                                                       String reduction) {
        return fusedLinearCrossEntropy(hidden, weight, targets, bias, ignoreIndex, reduction, null, null, null);
    }

    /**
     * {@link #fusedLinearCrossEntropy(DeviceBuffer, DeviceBuffer, DeviceBuffer, DeviceBuffer, long, String)}
     * with the gradients written into the given buffers.
     *
     * @param hidden (tokens, H)
     * @param weight (V, H)
     * @param targets int32 or int64, (tokens)
     * @param bias (V), or {@code null}
     * @param ignoreIndex tokens whose target is this count for nothing
     * @param reduction "mean", "sum" or "none"
     * @param gradHidden receives d loss / d hidden (hidden's shape), or {@code null} with no gradient wanted
     * @param gradWeight receives d loss / d weight (weight's shape); given with {@code gradHidden}
     * @param gradBias receives d loss / d bias, or {@code null} (no bias)
     * @return a new buffer holding the loss
     */
    public static DeviceBuffer fusedLinearCrossEntropy(DeviceBuffer hidden, DeviceBuffer weight,
                                                       DeviceBuffer targets, DeviceBuffer bias, long ignoreIndex,
                                                       String reduction, DeviceBuffer gradHidden,
                                                       DeviceBuffer gradWeight, DeviceBuffer gradBias) {
        Map<String, Object> options = lossOptions(ignoreIndex, 0.0, reduction, 0.0);
        if (bias != null) {
            options.put("bias", bias.handle());
        }
        if (gradHidden != null || gradWeight != null || gradBias != null) {
            options.put("grad", true);
            options.put("grad_hidden", need(gradHidden, "gradHidden").handle());
            options.put("grad_weight", need(gradWeight, "gradWeight").handle());
            if (gradBias != null) {
                options.put("grad_bias", gradBias.handle());
            }
        }
        return OpCall.run("fused_linear_cross_entropy", null, options, need(hidden, "hidden"),
                          need(weight, "weight"), need(targets, "targets"));
    }

    private static Map<String, Object> lossOptions(long ignoreIndex, double labelSmoothing, String reduction,
                                                   double zLoss) {
        if (reduction == null) {
            throw new InvalidArgumentException("reduction must not be null (use \"mean\", \"sum\" or \"none\")");
        }
        Map<String, Object> options = new HashMap<>();
        options.put("ignore_index", ignoreIndex);
        options.put("label_smoothing", labelSmoothing);
        options.put("reduction", reduction);
        options.put("z_loss", zLoss);
        return options;
    }
    // ---- end of losses ----

    // ---- argmax, top-k, sampling (issue 27 item 6) ---------------------------------------------

    /**
     * The index of the largest value of each row (the last dimension), as torch: NaN is the largest
     * value, ties go to the lowest index.
     *
     * @param x input (float32, float16 or bfloat16), any leading dimensions
     * @return a new {@link DType#INT32} buffer of {@code x}'s leading shape
     */
    public static DeviceBuffer argmax(DeviceBuffer x) {
        return OpCall.run("argmax", null, null, need(x, "x"));
    }

    /**
     * @param x input (float32, float16 or bfloat16), any leading dimensions
     * @param out an {@link DType#INT32} buffer of {@code x}'s leading shape
     * @return {@code out}
     */
    public static DeviceBuffer argmax(DeviceBuffer x, DeviceBuffer out) {
        return OpCall.run("argmax", need(out, "out"), null, need(x, "x"));
    }

    /**
     * The {@code k} largest values of each row (the last dimension), largest first, and their
     * indices; as torch.topk: NaN is the largest value, ties go to the lowest index.
     *
     * @param x input (float32, float16 or bfloat16), any leading dimensions
     * @param k how many, 1 to min(row width, 1024)
     * @return {values, indices}: new buffers of shape {@code x.shape[:-1] + [k]}, values in
     *     {@code x}'s dtype, indices {@link DType#INT32}
     */
    public static DeviceBuffer[] topK(DeviceBuffer x, int k) {
        need(x, "x");
        long[] shape = x.shape();
        if (shape.length == 0) {
            throw new InvalidArgumentException("topK: x must have at least one dimension, got a scalar");
        }
        if (k < 1 || k > shape[shape.length - 1]) {
            throw new InvalidArgumentException("topK: k = " + k + " must be in [1, " + shape[shape.length - 1]
                    + "] (the row width; topK takes k up to 1024)");
        }
        shape[shape.length - 1] = k;
        DeviceBuffer values = x.device().allocate(x.dtype(), shape);
        try {
            DeviceBuffer indices = x.device().allocate(DType.INT32, shape);
            try {
                topK(x, k, values, indices);
            } catch (RuntimeException e) {
                indices.close();
                throw e;
            }
            return new DeviceBuffer[] {values, indices};
        } catch (RuntimeException e) {
            values.close();
            throw e;
        }
    }

    /**
     * {@link #topK(DeviceBuffer, int)} into existing buffers (no allocation per call).
     *
     * @param x input (float32, float16 or bfloat16), any leading dimensions
     * @param k how many, 1 to min(row width, 1024)
     * @param values a buffer of {@code x}'s dtype and shape {@code x.shape[:-1] + [k]}
     * @param indices an {@link DType#INT32} buffer of the same shape
     */
    public static void topK(DeviceBuffer x, int k, DeviceBuffer values, DeviceBuffer indices) {
        Object[] pair = {need(values, "values").handle(), need(indices, "indices").handle()};
        OpCall.run("top_k", null, Map.of("out", pair), need(x, "x"), k);
    }

    /**
     * One token per row of {@code logits}, drawn on the device (see {@code isthmus.ops.sample}):
     * Philox4x32-10 keyed by {@code seed} at counter (offset, row), so the same seed and offset give
     * the same tokens on every device; Hugging Face's temperature, top-k and top-p filtering;
     * {@code temperature} 0 is greedy. In a captured {@link Graph}, {@link Graph#bindAll} rebinds
     * {@code "seed"}, {@code "offset"}, {@code "temperature"}, {@code "top_p"} per replay.
     *
     * @param logits (float32, float16 or bfloat16), any leading dimensions
     * @param temperature &gt;= 0
     * @param topK 0 (all tokens) or 1 to 1024
     * @param topP in (0, 1]
     * @param seed 0 or more
     * @param offset the counter of this step, 0 or more
     * @return a new {@link DType#INT32} buffer of the leading shape
     */
    public static DeviceBuffer sample(DeviceBuffer logits, double temperature, int topK, double topP, long seed,
                                      long offset) {
        return OpCall.run("sample", null, null, need(logits, "logits"), temperature, topK, topP, seed, offset);
    }

    /**
     * {@link #sample(DeviceBuffer, double, int, double, long, long)} with a counter per row.
     *
     * @param logits (float32, float16 or bfloat16), any leading dimensions
     * @param temperature &gt;= 0
     * @param topK 0 (all tokens) or 1 to 1024
     * @param topP in (0, 1]
     * @param seed 0 or more
     * @param offsets an {@link DType#INT64} buffer of one counter per row
     * @param out an {@link DType#INT32} buffer of the leading shape, or {@code null} for a new one
     * @return {@code out}, or a new buffer
     */
    public static DeviceBuffer sample(DeviceBuffer logits, double temperature, int topK, double topP, long seed,
                                      DeviceBuffer offsets, DeviceBuffer out) {
        return OpCall.run("sample", out, null, need(logits, "logits"), temperature, topK, topP, seed,
                          need(offsets, "offsets"));
    }

    /**
     * {@link #sample(DeviceBuffer, double, int, double, long, long)} into an existing buffer.
     *
     * @param logits (float32, float16 or bfloat16), any leading dimensions
     * @param temperature &gt;= 0
     * @param topK 0 (all tokens) or 1 to 1024
     * @param topP in (0, 1]
     * @param seed 0 or more
     * @param offset the counter of this step, 0 or more
     * @param out an {@link DType#INT32} buffer of the leading shape
     * @return {@code out}
     */
    public static DeviceBuffer sample(DeviceBuffer logits, double temperature, int topK, double topP, long seed,
                                      long offset, DeviceBuffer out) {
        return OpCall.run("sample", need(out, "out"), null, need(logits, "logits"), temperature, topK, topP, seed,
                          offset);
    }

    /**
     * Any op of the runtime's registry by name: a library op, or one registered in Python
     * ({@code isthmus.ops.registry.register(spec)}), on the device its buffers live on.
     *
     * <pre>{@code
     * DeviceBuffer y = Ops.call("scale", 0.5, x);   // the same as Ops.scale(0.5, x)
     * }</pre>
     *
     * @param name the op, as registered
     * @param args its positional arguments: {@link DeviceBuffer}s and Java numbers
     * @return its result (the caller's own buffer when the op returns an argument), or {@code null}
     *     when it returns nothing
     * @throws InvalidArgumentException if no op is registered under {@code name}; the message lists them
     */
    public static DeviceBuffer call(String name, Object... args) {
        return OpCall.run(needName(name), null, null, args == null ? new Object[0] : args);
    }

    /**
     * {@link #call(String, Object...)} writing the result into {@code out} (Python's {@code out=}).
     *
     * @param name the op, as registered
     * @param out the buffer to write the result into
     * @param args its positional arguments: {@link DeviceBuffer}s and Java numbers
     * @return {@code out}, as the op returns it
     */
    public static DeviceBuffer callInto(String name, DeviceBuffer out, Object... args) {
        return OpCall.run(needName(name), need(out, "out"), null, args == null ? new Object[0] : args);
    }

    // ---- attention (issue 28) ----------------------------------------------------------------

    /**
     * Causal softmax attention (flash prefill), {@code isthmus.ops.attention(q, k, v)}.
     *
     * @param q queries {@code (batch, seq_q, heads, head_dim)}
     * @param k keys {@code (batch, seq_k, kv_heads, head_dim)}, kv_heads dividing heads
     * @param v values, shaped as {@code k}
     * @return a new buffer shaped as {@code q}
     */
    public static DeviceBuffer attention(DeviceBuffer q, DeviceBuffer k, DeviceBuffer v) {
        return OpCall.run("attention", null, null, need(q, "q"), need(k, "k"), need(v, "v"));
    }

    /**
     * Softmax attention with options (mask, scale, window, softcap, variable lengths, log-sum-exp).
     *
     * @param q queries {@code (batch, seq_q, heads, head_dim)} ({@code (total_q, heads, head_dim)} with seqlens)
     * @param k keys {@code (batch, seq_k, kv_heads, head_dim)}
     * @param v values, shaped as {@code k}
     * @param options the options
     * @return a new buffer shaped as {@code q}
     */
    public static DeviceBuffer attention(DeviceBuffer q, DeviceBuffer k, DeviceBuffer v, AttentionOptions options) {
        if (options == null) {
            throw new InvalidArgumentException("options must not be null (use AttentionOptions.causalAttention())");
        }
        return OpCall.run("attention", null, options.keywords(), need(q, "q"), need(k, "k"), need(v, "v"));
    }

    /**
     * {@link #attention(DeviceBuffer, DeviceBuffer, DeviceBuffer, AttentionOptions)} into {@code out}.
     *
     * @param q queries
     * @param k keys
     * @param v values
     * @param options the options
     * @param out the buffer to write the result into, shaped as {@code q}
     * @return {@code out}
     */
    public static DeviceBuffer attention(DeviceBuffer q, DeviceBuffer k, DeviceBuffer v, AttentionOptions options,
                                         DeviceBuffer out) {
        if (options == null) {
            throw new InvalidArgumentException("options must not be null (use AttentionOptions.causalAttention())");
        }
        return OpCall.run("attention", need(out, "out"), options.keywords(), need(q, "q"), need(k, "k"),
                          need(v, "v"));
    }

    /**
     * Attention of the new tokens over a contiguous KV cache (flash decoding), {@code isthmus.ops.decode_attention}.
     *
     * @param q {@code (batch, heads, head_dim)} or {@code (batch, n_new, heads, head_dim)}
     * @param kCache {@code (batch, max_len, kv_heads, head_dim)}
     * @param vCache shaped as {@code kCache}
     * @param lengths int32 {@code (batch)}: the keys each sequence holds, the new tokens' included
     * @return a new buffer shaped as {@code q}
     */
    public static DeviceBuffer decodeAttention(DeviceBuffer q, DeviceBuffer kCache, DeviceBuffer vCache,
                                               DeviceBuffer lengths) {
        return OpCall.run("decode_attention", null, null, need(q, "q"), need(kCache, "kCache"), need(vCache, "vCache"),
                          need(lengths, "lengths"));
    }

    /**
     * Attention of the new tokens over a paged KV cache (flash decoding), {@code isthmus.ops.paged_decode_attention}.
     *
     * @param q {@code (batch, heads, head_dim)} or {@code (batch, n_new, heads, head_dim)}
     * @param kPages {@code (num_pages, page_size, kv_heads, head_dim)}
     * @param vPages shaped as {@code kPages}
     * @param pageTable int32 {@code (batch, max_pages)}
     * @param lengths int32 {@code (batch)}
     * @return a new buffer shaped as {@code q}
     */
    public static DeviceBuffer pagedDecodeAttention(DeviceBuffer q, DeviceBuffer kPages, DeviceBuffer vPages,
                                                    DeviceBuffer pageTable, DeviceBuffer lengths) {
        return OpCall.run("paged_decode_attention", null, null, need(q, "q"), need(kPages, "kPages"),
                          need(vPages, "vPages"), need(pageTable, "pageTable"), need(lengths, "lengths"));
    }

    /**
     * Writes new keys and values into a contiguous cache, in place ({@code isthmus.ops.kv_append}).
     *
     * @param kCache {@code (batch, max_len, kv_heads, head_dim)}
     * @param vCache shaped as {@code kCache}
     * @param kNew {@code (batch, n_new, kv_heads, head_dim)} or {@code (batch, kv_heads, head_dim)}
     * @param vNew shaped as {@code kNew}
     * @param positions int32 {@code (batch)}: where each sequence's first new token goes
     */
    public static void kvAppend(DeviceBuffer kCache, DeviceBuffer vCache, DeviceBuffer kNew, DeviceBuffer vNew,
                                DeviceBuffer positions) {
        OpCall.run("kv_append", null, null, need(kCache, "kCache"), need(vCache, "vCache"), need(kNew, "kNew"),
                   need(vNew, "vNew"), need(positions, "positions"));
    }

    /**
     * Writes new keys and values into a paged cache, in place ({@code isthmus.ops.paged_kv_append}).
     *
     * @param kPages {@code (num_pages, page_size, kv_heads, head_dim)}
     * @param vPages shaped as {@code kPages}
     * @param kNew {@code (batch, n_new, kv_heads, head_dim)} or {@code (batch, kv_heads, head_dim)}
     * @param vNew shaped as {@code kNew}
     * @param pageTable int32 {@code (batch, max_pages)}
     * @param positions int32 {@code (batch)}
     */
    public static void pagedKvAppend(DeviceBuffer kPages, DeviceBuffer vPages, DeviceBuffer kNew, DeviceBuffer vNew,
                                     DeviceBuffer pageTable, DeviceBuffer positions) {
        OpCall.run("paged_kv_append", null, null, need(kPages, "kPages"), need(vPages, "vPages"), need(kNew, "kNew"),
                   need(vNew, "vNew"), need(pageTable, "pageTable"), need(positions, "positions"));
    }

    /**
     * Merges two attention results over disjoint key sets ({@code isthmus.ops.merge_attention_states}).
     *
     * @param oA {@code (tokens, heads, head_dim)}
     * @param lseA float32 {@code (tokens, heads)}, natural log
     * @param oB shaped as {@code oA}
     * @param lseB shaped as {@code lseA}
     * @param out the merged output, shaped as {@code oA}
     * @param lseOut the merged log-sum-exp, float32 {@code (tokens, heads)}
     * @return {@code out}
     */
    public static DeviceBuffer mergeAttentionStates(DeviceBuffer oA, DeviceBuffer lseA, DeviceBuffer oB,
                                                    DeviceBuffer lseB, DeviceBuffer out, DeviceBuffer lseOut) {
        return OpCall.run("merge_attention_states", need(out, "out"), Map.of("lse_out", need(lseOut, "lseOut").handle()),
                          need(oA, "oA"), need(lseA, "lseA"), need(oB, "oB"), need(lseB, "lseB"));
    }

    /**
     * Linear attention ({@code isthmus.ops.linear_attention}).
     *
     * @param q {@code (batch, seq, heads, head_dim)}
     * @param k shaped as {@code q}
     * @param v shaped as {@code q}
     * @param causal whether token i sees only keys j &lt;= i
     * @param featureMap "elu1", "relu" or "identity"
     * @param state float32 {@code (batch, heads, head_dim, head_dim + 1)} continued from and updated in
     *              place, or {@code null}
     * @return a new buffer shaped as {@code q}
     */
    public static DeviceBuffer linearAttention(DeviceBuffer q, DeviceBuffer k, DeviceBuffer v, boolean causal,
                                               String featureMap, DeviceBuffer state) {
        Map<String, Object> kw = new HashMap<>();
        kw.put("causal", causal);
        kw.put("feature_map", featureMap == null ? "elu1" : featureMap);
        if (state != null) {
            kw.put("state", state.handle());
        }
        return OpCall.run("linear_attention", null, kw, need(q, "q"), need(k, "k"), need(v, "v"));
    }

    // ---- end of attention (issue 28) ---------------------------------------------------------

    private static String needName(String name) {
        if (name == null) {
            throw new InvalidArgumentException("the op name must not be null");
        }
        return name;
    }

    private static DeviceBuffer need(DeviceBuffer b, String name) {
        if (b == null) {
            throw new InvalidArgumentException(name + " must not be null");
        }
        return b;
    }
}
