package io.isthmus.spi;

import java.nio.ByteBuffer;
import java.util.Map;

/**
 * A Llama-family model loaded on a device (Python's {@code isthmus.llm.LlamaModel}); used by
 * {@link io.isthmus.llm.LlamaModel}.
 */
public interface LlamaHandle {
    /**
     * @return the model's configuration: {@code config.json}'s fields under their Hugging Face names
     *     (numbers as {@code Long}/{@code Double}, lists as {@code long[]}, absent fields left out),
     *     plus {@code "dtype"} (the weights' dtype on the device) and {@code "max_batch"}/{@code "max_context"}
     */
    Map<String, Object> config();

    /**
     * Starts a generation (Python's {@code model.start}): the prompts' prefill runs here or at the first step.
     *
     * @param prompts the token ids of each sequence of the batch (different lengths)
     * @param config the generation options under Python's names ({@code max_new_tokens, temperature, top_k,
     *     top_p, seed, stop_tokens})
     * @param returnLogits whether {@link LlamaSessionHandle#lastLogits()} will be asked for
     * @param tokens a direct, native-order buffer of at least {@code 4 * prompts.length} bytes into which
     *     every {@link LlamaSessionHandle#step()} writes its tokens as 32-bit ints
     * @return the running generation
     */
    LlamaSessionHandle start(int[][] prompts, Map<String, Object> config, boolean returnLogits, ByteBuffer tokens);

    /** Frees every buffer of the model; idempotent. */
    void close();
}
