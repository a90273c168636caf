package io.isthmus.spi;

/** A model folder's tokenizer (Python's {@code isthmus.llm.Tokenizer}); used by {@link io.isthmus.llm.Tokenizer}. */
public interface TokenizerHandle {
    /**
     * @param text the text
     * @param addSpecialTokens whether to add the tokenizer's special tokens (BOS...) as its config says
     * @return the token ids
     */
    int[] encode(String text, boolean addSpecialTokens);

    /**
     * @param ids token ids
     * @param skipSpecialTokens whether to leave special tokens (BOS, EOS...) out of the text
     * @return the text
     */
    String decode(int[] ids, boolean skipSpecialTokens);


    /**
     * @return the ids that end a generation: the tokenizer config's end token and the chat templates'
     *     end-of-turn markers the vocabulary has
     */
    int[] stopTokens();

    /**
     * The conversation rendered by the chat template of {@code tokenizer_config.json}, as Hugging Face
     * transformers' {@code apply_chat_template} does it (one crossing for text or ids).
     *
     * @param roles the messages' roles, one a message
     * @param contents the messages' contents, parallel to {@code roles}
     * @param addGenerationPrompt whether to end with the header of the assistant's turn
     * @param tokenize false: the text ({@link String}); true: its token ids ({@code int[]}), no special
     *     tokens added again
     * @return a {@link String} or an {@code int[]}
     */
    Object applyChatTemplate(String[] roles, String[] contents, boolean addGenerationPrompt, boolean tokenize);
}
