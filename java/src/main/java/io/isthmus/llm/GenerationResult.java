package io.isthmus.llm;

import io.isthmus.InvalidArgumentException;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What {@link LlamaModel#generate} produced: the generated ids of each prompt (in the prompts'
 * order, a stop token included when one ended the sequence), the logits at each prompt's last
 * position when {@link GenerationConfig#returnLogits()} asked for them, and the speed.
 */
public final class GenerationResult {
    private final List<int[]> tokens;
    private final float[] logits;
    private final int vocabSize;
    private final long promptTokens;
    private final double promptSeconds;
    private final long decodeTokens;
    private final double decodeSeconds;
    private final int steps;
    private final double stepSeconds;

    GenerationResult(List<int[]> tokens, float[] logits, int vocabSize, long promptTokens, double promptSeconds,
                     long decodeTokens, double decodeSeconds, int steps, double stepSeconds) {
        this.tokens = tokens;
        this.logits = logits;
        this.vocabSize = vocabSize;
        this.promptTokens = promptTokens;
        this.promptSeconds = promptSeconds;
        this.decodeTokens = decodeTokens;
        this.decodeSeconds = decodeSeconds;
        this.steps = steps;
        this.stepSeconds = stepSeconds;
    }

    /** @return how many prompts there were */
    public int size() {
        return tokens.size();
    }

    /**
     * @param sequence a prompt's index
     * @return the ids generated for it (a copy)
     */
    public int[] tokens(int sequence) {
        return row(sequence).clone();
    }

    /** @return the ids generated for each prompt, in order (copies) */
    public List<int[]> tokens() {
        List<int[]> out = new ArrayList<>(tokens.size());
        tokens.forEach(t -> out.add(t.clone()));
        return Collections.unmodifiableList(out);
    }

    /** @return whether the logits were asked for ({@link GenerationConfig#returnLogits()}) */
    public boolean hasLogits() {
        return logits != null;
    }

    /**
     * @param sequence a prompt's index
     * @return the logits at its prompt's last position ({@code vocabSize} values, float32)
     * @throws InvalidArgumentException if they were not asked for
     */
    public float[] lastLogits(int sequence) {
        row(sequence);
        float[] all = allLogits();
        float[] out = new float[vocabSize];
        System.arraycopy(all, sequence * vocabSize, out, 0, vocabSize);
        return out;
    }

    /**
     * @return every prompt's last-position logits, {@code size() * vocabSize()} values row by row (a copy)
     * @throws InvalidArgumentException if they were not asked for
     */
    public float[] lastLogits() {
        return allLogits().clone();
    }

    private float[] allLogits() {
        if (logits == null) {
            throw new InvalidArgumentException("no logits in this result: ask for them with "
                    + "GenerationConfig.builder().returnLogits(true)");
        }
        return logits;
    }

    private int[] row(int sequence) {
        if (sequence < 0 || sequence >= tokens.size()) {
            throw new InvalidArgumentException("sequence " + sequence + " is not in this result of " + tokens.size()
                    + " prompts (0.." + (tokens.size() - 1) + ")");
        }
        return tokens.get(sequence);
    }

    /** @return the model's vocabulary size (the length of a row of logits) */
    public int vocabSize() {
        return vocabSize;
    }

    /** @return how many prompt tokens were prefilled */
    public long promptTokens() {
        return promptTokens;
    }

    /** @return how many tokens the decode steps produced, over all sequences */
    public long decodeTokens() {
        return decodeTokens;
    }

    /** @return the prefill's speed: prompt tokens per second (the runtime's clock) */
    public double promptTokensPerSecond() {
        return promptSeconds > 0 ? promptTokens / promptSeconds : 0.0;
    }

    /** @return the decode's speed: generated tokens per second over all sequences (the runtime's clock) */
    public double decodeTokensPerSecond() {
        return decodeSeconds > 0 ? decodeTokens / decodeSeconds : 0.0;
    }

    /** @return how many steps (calls into the runtime, one token per sequence each) the generation took */
    public int steps() {
        return steps;
    }

    /** @return the wall-clock seconds of all steps as seen from Java (the crossings included) */
    public double stepSeconds() {
        return stepSeconds;
    }

    /** @return the prefill's seconds (the runtime's clock) */
    public double promptSeconds() {
        return promptSeconds;
    }

    /** @return the decode's seconds (the runtime's clock) */
    public double decodeSeconds() {
        return decodeSeconds;
    }

    @Override
    public String toString() {
        return String.format("GenerationResult[%d sequences, %d prompt tokens at %.1f tokens/s, %d generated at %.1f "
                + "tokens/s in %d steps]", tokens.size(), promptTokens, promptTokensPerSecond(), decodeTokens,
                decodeTokensPerSecond(), steps);
    }
}
