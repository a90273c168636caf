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
