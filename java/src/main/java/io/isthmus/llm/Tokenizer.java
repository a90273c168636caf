package io.isthmus.llm;

import io.isthmus.InvalidArgumentException;
import io.isthmus.RuntimeAccess;
import io.isthmus.spi.TokenizerHandle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A model folder's tokenizer ({@code tokenizer.json}, run by the {@code tokenizers} package in the
 * runtime: {@code pip install isthmus[llm]}), from {@link #load(Path)} or {@link LlamaModel#tokenizer()}.
 *
 * <pre>{@code
 * int[] prompt = model.tokenizer().encode("The capital of France is");
 * String text = model.tokenizer().decode(result.tokens(0));
 * List<Map<String, String>> chat = List.of(Map.of("role", "system", "content", "You are terse."),
 *         Map.of("role", "user", "content", "Capital of France?"));
 * String chatText = model.tokenizer().applyChatTemplate(chat);   // as transformers renders it
 * int[] chatPrompt = model.tokenizer().encodeChat(chat);         // the ids of that text, BOS written once
 * }</pre>
 */
public final class Tokenizer {
    private final TokenizerHandle handle;

    private Tokenizer(TokenizerHandle handle) {
        this.handle = handle;
    }

    /**
     * @param folder a model folder with a {@code tokenizer.json} (and, where it has one, a
     *     {@code tokenizer_config.json}: its special tokens are honoured)
     * @return its tokenizer
     * @throws InvalidArgumentException if the folder has no {@code tokenizer.json}, or the runtime lacks the
     *     {@code tokenizers} package ({@code pip install isthmus[llm]})
     */
    public static Tokenizer load(Path folder) {
        if (folder == null || !Files.isRegularFile(folder.resolve("tokenizer.json"))) {
            throw new InvalidArgumentException("Tokenizer.load: " + folder + " has no tokenizer.json; pass token ids "
                    + "instead");
        }
        return new Tokenizer(RuntimeAccess.runtime().loadTokenizer(folder.toString()));
    }

    /**
     * @param text the text
     * @return its token ids, with the special tokens (BOS...) the tokenizer's config adds
     */
    public int[] encode(String text) {
        return encode(text, true);
    }

    /**
     * @param text the text
     * @param addSpecialTokens whether to add the special tokens (BOS...) the tokenizer's config asks for
     * @return its token ids
     */
    public int[] encode(String text, boolean addSpecialTokens) {
        if (text == null) {
            throw new InvalidArgumentException("Tokenizer.encode(null): pass the text to encode");
        }
        return handle.encode(text, addSpecialTokens);
    }

    /**
     * @param ids token ids
     * @return their text, special tokens left out
     */
    public String decode(int[] ids) {
        return decode(ids, true);
    }

    /**
     * @param ids token ids
     * @param skipSpecialTokens whether to leave special tokens (BOS, EOS...) out
     * @return their text
     */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        if (ids == null) {
            throw new InvalidArgumentException("Tokenizer.decode(null): pass the token ids to decode");
        }
        return handle.decode(ids, skipSpecialTokens);
    }

    /**
     * @return the ids that end a generation: the end token of {@code tokenizer_config.json} and the chat
     *     templates' end-of-turn markers ({@code <|eot_id|>}, {@code <|im_end|>}, ...) the vocabulary has
     */
    public int[] stopTokens() {
        return handle.stopTokens();
    }

    /**
     * The conversation rendered by the model's chat template ({@code chat_template} of
     * {@code tokenizer_config.json}) exactly as Hugging Face transformers'
     * {@code apply_chat_template(messages, add_generation_prompt=True, tokenize=False)} does, ending with the
     * header of the assistant's turn.
     *
     * @param messages the conversation: maps with a {@code "role"} ({@code system}, {@code user},
     *     {@code assistant}) and a {@code "content"}
     * @return the prompt text, special tokens (BOS, headers) written as text
     * @throws InvalidArgumentException if a message lacks a role or content, or the model has no chat template
     * @throws io.isthmus.FormatException if the chat template is not a valid Jinja template
     */
    public String applyChatTemplate(List<Map<String, String>> messages) {
        return applyChatTemplate(messages, true);
    }

    /**
     * @param messages the conversation, as {@link #applyChatTemplate(List)}
     * @param addGenerationPrompt whether to end with the header of the assistant's turn (true to generate
     *     the reply)
     * @return the prompt text
     * @see #applyChatTemplate(List)
     */
    public String applyChatTemplate(List<Map<String, String>> messages, boolean addGenerationPrompt) {
        return (String) chat("applyChatTemplate", messages, addGenerationPrompt, false);
    }

    /**
     * @param messages the conversation, as {@link #applyChatTemplate(List)}
     * @return the token ids of {@link #applyChatTemplate(List)}'s text, no special tokens added again (the
     *     template writes the BOS itself)
     */
    public int[] encodeChat(List<Map<String, String>> messages) {
        return encodeChat(messages, true);
    }

    /**
     * @param messages the conversation, as {@link #applyChatTemplate(List)}
     * @param addGenerationPrompt whether to end with the header of the assistant's turn
     * @return the token ids of {@link #applyChatTemplate(List, boolean)}'s text, no special tokens added again
     */
    public int[] encodeChat(List<Map<String, String>> messages, boolean addGenerationPrompt) {
        return (int[]) chat("encodeChat", messages, addGenerationPrompt, true);
    }

    private Object chat(String method, List<Map<String, String>> messages, boolean addGenerationPrompt,
            boolean tokenize) {
        if (messages == null) {
            throw new InvalidArgumentException("Tokenizer." + method + "(null): pass the conversation as a list of "
                    + "maps with \"role\" and \"content\"");
        }
        String[] roles = new String[messages.size()];
        String[] contents = new String[messages.size()];
        for (int i = 0; i < roles.length; i++) {
            Map<String, String> m = messages.get(i);
            Object role = m == null ? null : m.get("role");
            Object content = m == null ? null : m.get("content");
            if (!(role instanceof String) || !(content instanceof String)) {
                throw new InvalidArgumentException("Tokenizer." + method + ": messages[" + i + "] must be a map with "
                        + "a String \"role\" and a String \"content\", got " + m);
            }
            roles[i] = (String) role;
            contents[i] = (String) content;
        }
        return handle.applyChatTemplate(roles, contents, addGenerationPrompt, tokenize);
    }
}
