package io.isthmus.llm;

import io.isthmus.InvalidArgumentException;
import io.isthmus.RuntimeAccess;
import io.isthmus.spi.TokenizerHandle;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A model folder's tokenizer ({@code tokenizer.json}, run by the {@code tokenizers} package in the
 * runtime: {@code pip install isthmus[llm]}), from {@link #load(Path)} or {@link LlamaModel#tokenizer()}.
 *
 * <pre>{@code
 * int[] prompt = model.tokenizer().encode("The capital of France is");
 * String text = model.tokenizer().decode(result.tokens(0));
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
}
