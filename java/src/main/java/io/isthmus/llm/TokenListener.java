package io.isthmus.llm;

/**
 * Receives each token as it is generated (streaming), on the thread that runs the generation:
 * keep it quick, the next step waits for it. An exception thrown here ends the generation and is
 * thrown by {@link LlamaModel#generate}.
 */
@FunctionalInterface
public interface TokenListener {
    /**
     * @param sequence the prompt's index in the batch
     * @param token the token generated for it (a stop token too, when one ends the sequence)
     */
    void onToken(int sequence, int token);
}
