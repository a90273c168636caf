package io.isthmus.spi;

import java.util.Map;

/** One running generation of a {@link LlamaHandle} (Python's {@code isthmus.llm} session). */
public interface LlamaSessionHandle {
    /**
     * One generation step for every sequence of the batch, in one crossing.
     *
     * @return how many tokens were written into the buffer given to {@link LlamaHandle#start} (the batch
     *     size; -1 stands for a sequence that has finished), 0 once every sequence is done
     */
    int step();

    /**
     * @return the logits at each prompt's last position, float32, {@code batch * vocab} values row by row
     *     (asked for at {@link LlamaHandle#start})
     */
    float[] lastLogits();

    /**
     * @return {@code prompt_tokens}, {@code prompt_seconds}, {@code decode_tokens}, {@code decode_seconds}
     *     (and whatever else the runtime counts) as doubles
     */
    Map<String, Double> stats();

    /** Ends the generation and frees what it holds; idempotent. */
    void close();
}
