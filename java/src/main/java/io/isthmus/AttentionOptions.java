package io.isthmus;

import java.util.HashMap;
import java.util.Map;

/**
 * The options of {@link Ops#attention(DeviceBuffer, DeviceBuffer, DeviceBuffer, AttentionOptions)}
 * (Python's keyword arguments of {@code isthmus.ops.attention}): a value, each {@code with}
 * method a copy with one option changed.
 *
 * <pre>{@code
 * AttentionOptions opts = AttentionOptions.causalAttention().withSlidingWindow(4096).withLse(lse);
 * try (DeviceBuffer o = Ops.attention(q, k, v, opts)) { ... }
 * }</pre>
 *
 * @param causal a query sees only the keys up to its own position (aligned to the end)
 * @param scale the scores' scale, or {@code null} for 1/sqrt(head_dim)
 * @param slidingWindow the most keys a query sees, or {@code null} for all
 * @param softcap scores become {@code softcap * tanh(score / softcap)}, or {@code null} for none
 * @param cuSeqlensQ int32 offsets of the query sequences ({@code batch + 1}), or {@code null} (dense)
 * @param cuSeqlensK int32 offsets of the key sequences, given with {@code cuSeqlensQ}
 * @param lseOut a float32 buffer to write each row's log-sum-exp into, or {@code null}
 */
public record AttentionOptions(boolean causal, Double scale, Integer slidingWindow, Double softcap,
                               DeviceBuffer cuSeqlensQ, DeviceBuffer cuSeqlensK, DeviceBuffer lseOut) {
    /** @return causal attention, every other option at its default */
    public static AttentionOptions causalAttention() {
        return new AttentionOptions(true, null, null, null, null, null, null);
    }

    /** @return attention over every key (not causal), every other option at its default */
    public static AttentionOptions fullAttention() {
        return new AttentionOptions(false, null, null, null, null, null, null);
    }

    /**
     * @param s the scores' scale
     * @return these options with that scale
     */
    public AttentionOptions withScale(double s) {
        return new AttentionOptions(causal, s, slidingWindow, softcap, cuSeqlensQ, cuSeqlensK, lseOut);
    }

    /**
     * @param w the most keys a query sees (itself included)
     * @return these options with that window
     */
    public AttentionOptions withSlidingWindow(int w) {
        return new AttentionOptions(causal, scale, w, softcap, cuSeqlensQ, cuSeqlensK, lseOut);
    }

    /**
     * @param c the soft cap of the scores (positive)
     * @return these options with that cap
     */
    public AttentionOptions withSoftcap(double c) {
        return new AttentionOptions(causal, scale, slidingWindow, c, cuSeqlensQ, cuSeqlensK, lseOut);
    }

    /**
     * Variable lengths: q, k and v are {@code (total_tokens, heads, head_dim)}, the sequences one after another.
     *
     * @param q int32 offsets of the query sequences ({@code batch + 1}, 0 first)
     * @param k int32 offsets of the key sequences
     * @return these options with those offsets
     */
    public AttentionOptions withSeqlens(DeviceBuffer q, DeviceBuffer k) {
        return new AttentionOptions(causal, scale, slidingWindow, softcap, q, k, lseOut);
    }

    /**
     * @param lse a float32 buffer of {@code (batch, heads, seq_q)} ({@code (heads, total_q)} with
     *            variable lengths) to write each row's natural log-sum-exp into
     * @return these options writing the log-sum-exp there
     */
    public AttentionOptions withLse(DeviceBuffer lse) {
        return new AttentionOptions(causal, scale, slidingWindow, softcap, cuSeqlensQ, cuSeqlensK, lse);
    }

    /** @return the keyword arguments of the Python op */
    Map<String, Object> keywords() {
        Map<String, Object> kw = new HashMap<>();
        kw.put("causal", causal);
        if (scale != null) {
            kw.put("scale", scale);
        }
        if (slidingWindow != null) {
            kw.put("sliding_window", slidingWindow);
        }
        if (softcap != null) {
            kw.put("softcap", softcap);
        }
        if (cuSeqlensQ != null) {
            kw.put("cu_seqlens_q", cuSeqlensQ.handle());
        }
        if (cuSeqlensK != null) {
            kw.put("cu_seqlens_k", cuSeqlensK.handle());
        }
        if (lseOut != null) {
            kw.put("lse_out", lseOut.handle());
        }
        return kw;
    }
}
