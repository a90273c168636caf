package example.llm;

import io.isthmus.Device;
import io.isthmus.Isthmus;
import io.isthmus.IsthmusException;
import io.isthmus.llm.GenerationConfig;
import io.isthmus.llm.GenerationResult;
import io.isthmus.llm.LlamaModel;
import io.isthmus.llm.LlamaOptions;
import io.isthmus.llm.Tokenizer;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

/**
 * An interactive generation CLI on a Llama-family Hugging Face model folder: each line read from
 * stdin is a prompt (text when the folder has a tokenizer.json, else comma-separated token ids); the
 * tokens stream to stdout as the model generates them, then a line with the speed.
 *
 * <pre>
 * isthmus java -cp target/classes example.llm.Chat --model DIR [--device ID] [--max-new-tokens N]
 *     [--temperature T] [--top-p P] [--seed S]
 * </pre>
 *
 * Without a tokenizer a reply is its ids, comma separated, on one line ({@code 12,7,301}). Empty line
 * or end of input: quit.
 */
public final class Chat {
    private Chat() {
    }

    /**
     * Generates for one prompt, handing what it generates to {@code out} piece by piece as it comes:
     * text when there is a tokenizer, else ids ({@code "12"}, then {@code ",7"}, ...).
     *
     * @param model the model
     * @param tokenizer the model's tokenizer, or {@code null}
     * @param prompt the prompt's token ids
     * @param cfg how to generate
     * @param out receives each piece
     * @return the generation's result
     */
    public static GenerationResult stream(LlamaModel model, Tokenizer tokenizer, int[] prompt, GenerationConfig cfg,
                                          Consumer<String> out) {
        int[] ids = new int[cfg.maxNewTokens()];
        int[] n = {0};
        String[] shown = {""};
        return model.generate(List.of(prompt), cfg, (seq, token) -> {
            ids[n[0]++] = token;
            if (tokenizer == null) {
                out.accept((n[0] == 1 ? "" : ",") + token);
            } else { // decode what came so far and hand on what is new (a token may complete a character)
                String text = tokenizer.decode(java.util.Arrays.copyOf(ids, n[0]));
                if (text.startsWith(shown[0]) && text.length() > shown[0].length()) {
                    out.accept(text.substring(shown[0].length()));
                    shown[0] = text;
                }
            }
        });
    }

    /**
     * @param line a line of input
     * @param tokenizer the model's tokenizer, or {@code null}
     * @return the prompt's ids
     */
    static int[] prompt(String line, Tokenizer tokenizer) {
        if (tokenizer != null) {
            return tokenizer.encode(line);
        }
        String[] parts = line.trim().split("\\s*,\\s*");
        int[] ids = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            ids[i] = Integer.parseInt(parts[i]);
        }
        return ids;
    }

    /**
     * @param args {@code --model DIR [--device ID] [--max-new-tokens N] [--temperature T] [--top-p P] [--seed S]}
     * @throws IOException if stdin cannot be read
     */
    public static void main(String[] args) throws IOException {
        Path model = null;
        String device = null;
        GenerationConfig.Builder cfg = GenerationConfig.builder().maxNewTokens(64);
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--model" -> model = Path.of(args[i + 1]);
                case "--device" -> device = args[i + 1];
                case "--max-new-tokens" -> cfg.maxNewTokens(Integer.parseInt(args[i + 1]));
                case "--temperature" -> cfg.temperature(Double.parseDouble(args[i + 1]));
                case "--top-p" -> cfg.topP(Double.parseDouble(args[i + 1]));
                case "--seed" -> cfg.seed(Long.parseLong(args[i + 1]));
                default -> usage("unknown option " + args[i]);
            }
        }
        if (model == null || args.length % 2 != 0) {
            usage("--model DIR is required");
        }
        Device dev = device == null ? Isthmus.get().device() : Isthmus.get().device(device);
        PrintStream out = System.out;
        try (LlamaModel m = LlamaModel.load(model, dev, LlamaOptions.defaults().withMaxBatch(1))) {
            Tokenizer tok = m.hasTokenizer() ? m.tokenizer() : null;
            // a reply ends at the model's end tokens: config.json's eos_token_id, the tokenizer's end of turn
            int[] stops = java.util.stream.IntStream.concat(java.util.Arrays.stream(m.config().eosTokenIds()),
                    java.util.Arrays.stream(tok == null ? new int[0] : tok.stopTokens())).distinct().toArray();
            GenerationConfig config = cfg.stopTokens(stops).build();
            System.err.println("loaded " + m + "; type a prompt (" + (tok == null ? "token ids 1,2,3" : "text")
                    + "), an empty line to quit");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null && !line.isBlank(); ) {
                int[] ids;
                try {
                    ids = prompt(line, tok);
                } catch (NumberFormatException e) {
                    System.err.println("not a list of token ids: " + line);
                    continue;
                }
                try {
                    GenerationResult r = stream(m, tok, ids, config, piece -> {
                        out.print(piece);
                        out.flush();
                    });
                    out.println();
                    out.printf("[%d prompt tokens at %.1f tokens/s; %d generated at %.1f tokens/s]%n", r.promptTokens(),
                            r.promptTokensPerSecond(), r.tokens(0).length, r.decodeTokensPerSecond());
                    out.flush();
                } catch (IsthmusException e) {
                    System.err.println("cannot generate: " + e.getMessage());
                }
            }
        }
    }

    private static void usage(String problem) {
        System.err.println("Chat: " + problem + "; usage: example.llm.Chat --model DIR [--device ID] "
                + "[--max-new-tokens N] [--temperature T] [--top-p P] [--seed S]");
        System.exit(2);
    }
}
