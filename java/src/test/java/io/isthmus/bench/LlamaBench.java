package io.isthmus.bench;

import io.isthmus.llm.GenerationConfig;
import io.isthmus.llm.GenerationResult;
import io.isthmus.llm.LlamaModel;

import java.util.List;

/**
 * Decode timing for benchmarks/llama.py, in Java: the wall clock of every step of one
 * {@link LlamaModel#generate} (when sequence 0's token reaches the listener, on the generating
 * thread), so a steady-state rate leaves out the first steps (the prefill's token, the graph's capture).
 */
public final class LlamaBench {
    private LlamaBench() {
    }

    /**
     * @param model the model
     * @param prompts the batch
     * @param cfg how many tokens (no stop tokens: every sequence runs to the end)
     * @return {@code System.nanoTime()} at each step, then the result's prompt tokens/s and runtime-clock decode tokens/s
     *     as their {@code Double.doubleToLongBits}
     */
    public static long[] stepTimes(LlamaModel model, List<int[]> prompts, GenerationConfig cfg) {
        long[] times = new long[cfg.maxNewTokens() + 2];
        int[] n = {0};
        GenerationResult r = model.generate(prompts, cfg, (seq, token) -> {
            if (seq == 0 && n[0] < cfg.maxNewTokens()) {
                times[n[0]++] = System.nanoTime();
            }
        });
        times[cfg.maxNewTokens()] = Double.doubleToLongBits(r.promptTokensPerSecond());
        times[cfg.maxNewTokens() + 1] = Double.doubleToLongBits(r.decodeTokensPerSecond());
        return times;
    }
}
