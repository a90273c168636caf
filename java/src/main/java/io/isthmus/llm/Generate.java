package io.isthmus.llm;

import io.isthmus.Device;
import io.isthmus.Isthmus;
import io.isthmus.IsthmusException;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The command line: generates from a model folder for a batch of prompts.
 *
 * <pre>
 * isthmus java -cp ARTIFACT io.isthmus.llm.Generate --model DIR (--prompt-ids 1,2,3 ... | --prompt TEXT ...)
 *     [--max-new-tokens N] [--temperature T --top-k K --top-p P --seed S] [--device ID]
 *     [--batch-file F] [--dump-logits FILE.npy] [--chat]
 * </pre>
 *
 * <p>Every {@code --prompt-ids} or {@code --prompt} is one sequence of the batch, in order, then each
 * non-empty line of {@code --batch-file} (a line of comma-separated ids is ids, any other line text).
 * Text needs the folder's {@code tokenizer.json}. With {@code --chat} each text prompt is one user message
 * rendered through the chat template of {@code tokenizer_config.json} (as transformers'
 * {@code apply_chat_template(..., add_generation_prompt=True)}), for Instruct models; without it the
 * text is encoded as given. Greedy unless a sampling option is given (then the
 * temperature is 1 unless {@code --temperature} says otherwise; {@code --temperature 0} is greedy). A
 * sequence ends after {@code --max-new-tokens}, or at one of the model's end tokens ({@code config.json}'s
 * {@code eos_token_id}, the tokenizer's end-of-turn tokens), which is printed with it.
 * stdout: one line per prompt, in order: its generated ids, comma separated, then, when the folder has
 * a tokenizer, a tab and their text (newlines, tabs and backslashes escaped as {@code \n}, {@code \t},
 * {@code \\}). stderr: the prompt and decode speeds. {@code --dump-logits} writes the logits at each
 * prompt's last position as a float32 {@code (batch, vocab)} NumPy file. Bad arguments exit with 2,
 * a model that cannot be loaded or run with 1, each with one line on stderr.
 */
public final class Generate {
    static final String USAGE = "usage: isthmus java -cp ARTIFACT io.isthmus.llm.Generate --model DIR "
            + "(--prompt-ids 1,2,3 ... | --prompt TEXT ...) [--max-new-tokens N] "
            + "[--temperature T --top-k K --top-p P --seed S] [--device ID] [--batch-file F] [--dump-logits FILE.npy] "
            + "[--chat (each text prompt is one user message through the model's chat template)]";
    private static final Pattern IDS = Pattern.compile("\\s*\\d+\\s*(,\\s*\\d+\\s*)*");

    private Generate() {
    }

    /**
     * Runs the command line; exits with its status when not 0.
     *
     * @param args the arguments
     */
    public static void main(String[] args) {
        int status = run(args, System.out, System.err);
        System.out.flush();
        System.err.flush();
        if (status != 0) {
            System.exit(status);
        }
    }

    /** A bad command line (exit status 2) or a model that cannot be loaded or run (1). */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;

        Failure(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    /** One prompt as given: ids, or text to encode. */
    record Prompt(int[] ids, String text) {
    }

    /** The parsed command line. */
    static final class Args {
        Path model;
        final List<Prompt> prompts = new ArrayList<>();
        int maxNewTokens = 32;
        Double temperature;
        Integer topK;
        Double topP;
        Long seed;
        String device;
        Path dumpLogits;
        boolean chat;
        boolean help;

        boolean sampling() {
            return topK != null || topP != null || seed != null || (temperature != null && temperature > 0);
        }

        GenerationConfig config() {
            GenerationConfig.Builder b = GenerationConfig.builder().maxNewTokens(maxNewTokens).returnLogits(dumpLogits != null);
            if (sampling() && !(temperature != null && temperature == 0.0)) {
                b.temperature(temperature == null ? 1.0 : temperature);
                if (topK != null) {
                    b.topK(topK);
                }
                if (topP != null) {
                    b.topP(topP);
                }
                if (seed != null) {
                    b.seed(seed);
                }
            }
            return b.build();
        }
    }

    /**
     * Runs the command line.
     *
     * @param args the arguments
     * @param out where the generated lines go
     * @param err where the speeds and the error line go
     * @return the exit status: 0, 2 for bad arguments, 1 for a model that cannot be loaded or run
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        try {
            Args a = parse(args);
            if (a.help) {
                out.println(USAGE);
                return 0;
            }
            generate(a, out, err);
            return 0;
        } catch (Failure f) {
            err.println("Generate: " + f.getMessage());
            return f.status;
        }
    }

    static Args parse(String[] argv) throws Failure {
        Args a = new Args();
        List<Path> batchFiles = new ArrayList<>();
        for (int i = 0; i < argv.length; i++) {
            String flag = argv[i];
            String value = null;
            int eq = flag.indexOf('=');
            if (flag.startsWith("--") && eq > 0) {
                value = flag.substring(eq + 1);
                flag = flag.substring(0, eq);
            }
            if (flag.equals("-h") || flag.equals("--help")) {
                a.help = true;
                return a;
            }
            if (flag.equals("--chat") && value == null) {
                a.chat = true;
                continue;
            }
            if (!flag.startsWith("--")) {
                throw new Failure(2, "unexpected argument '" + flag + "' (every prompt follows --prompt-ids or --prompt; "
                        + "--help for the usage)");
            }
            if (value == null) {
                if (i + 1 >= argv.length) {
                    throw new Failure(2, flag + " needs a value (--help for the usage)");
                }
                value = argv[++i];
            }
            switch (flag) {
                case "--model" -> a.model = Path.of(value);
                case "--prompt-ids" -> a.prompts.add(new Prompt(ids(value, "--prompt-ids"), null));
                case "--prompt" -> a.prompts.add(new Prompt(null, value));
                case "--max-new-tokens" -> a.maxNewTokens = positive(flag, value);
                case "--temperature" -> a.temperature = number(flag, value, 0.0, Double.MAX_VALUE, "a number >= 0");
                case "--top-k" -> a.topK = count(flag, value);
                case "--top-p" -> a.topP = number(flag, value, Double.MIN_VALUE, 1.0, "a number in (0, 1]");
                case "--seed" -> a.seed = seed(value);
                case "--device" -> a.device = value;
                case "--batch-file" -> batchFiles.add(Path.of(value));
                case "--dump-logits" -> a.dumpLogits = Path.of(value);
                default -> throw new Failure(2, "unknown option " + flag + " (--help for the usage)");
            }
        }
        for (Path f : batchFiles) {
            readBatchFile(f, a.prompts);
        }
        if (a.model == null) {
            throw new Failure(2, "--model DIR is required (a Hugging Face model folder: config.json and safetensors)");
        }
        if (a.prompts.isEmpty()) {
            throw new Failure(2, "no prompts: give --prompt-ids 1,2,3 or --prompt TEXT (each one sequence), "
                    + "or --batch-file F");
        }
        if (a.dumpLogits != null) {
            Path parent = a.dumpLogits.toAbsolutePath().getParent();
            if (parent != null && !Files.isDirectory(parent)) {
                throw new Failure(2, "--dump-logits " + a.dumpLogits + ": the folder " + parent + " does not exist");
            }
        }
        return a;
    }

    private static void readBatchFile(Path f, List<Prompt> prompts) throws Failure {
        List<String> lines;
        try {
            lines = Files.readAllLines(f);
        } catch (IOException e) {
            throw new Failure(2, "cannot read --batch-file " + f + " (" + e.getClass().getSimpleName() + ": "
                    + e.getMessage() + ")");
        }
        for (String line : lines) {
            if (line.isBlank()) {
                continue;
            }
            prompts.add(IDS.matcher(line).matches() ? new Prompt(ids(line, "--batch-file line"), null)
                    : new Prompt(null, line));
        }
    }

    private static int[] ids(String value, String what) throws Failure {
        if (!IDS.matcher(value).matches()) {
            throw new Failure(2, what + " '" + value + "' is not a comma-separated list of token ids (e.g. 1,2,3)");
        }
        String[] parts = value.split(",");
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                out[i] = Integer.parseInt(parts[i].trim());
            } catch (NumberFormatException e) {
                throw new Failure(2, what + " '" + value + "': " + parts[i].trim() + " is too large for a token id");
            }
        }
        return out;
    }

    private static int positive(String flag, String value) throws Failure {
        int v = count(flag, value);
        if (v < 1) {
            throw new Failure(2, flag + " needs an integer >= 1, got '" + value + "'");
        }
        return v;
    }

    private static int count(String flag, String value) throws Failure {
        try {
            int v = Integer.parseInt(value.trim());
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new Failure(2, flag + " needs an integer >= 0, got '" + value + "'");
    }

    private static double number(String flag, String value, double lo, double hi, String expected) throws Failure {
        try {
            double v = Double.parseDouble(value.trim());
            if (v >= lo && v <= hi) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new Failure(2, flag + " needs " + expected + ", got '" + value + "'");
    }

    private static long seed(String value) throws Failure {
        try {
            long v = Long.parseLong(value.trim());
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new Failure(2, "--seed needs an integer >= 0, got '" + value + "'");
    }

    private static void generate(Args a, PrintStream out, PrintStream err) throws Failure {
        if (!Files.isDirectory(a.model)) {
            throw new Failure(2, "--model " + a.model + " is not a folder (a Hugging Face model folder: config.json "
                    + "and safetensors)");
        }
        boolean text = a.prompts.stream().anyMatch(p -> p.text() != null);
        if (text && !Files.isRegularFile(a.model.resolve("tokenizer.json"))) {
            throw new Failure(2, "text prompts (--prompt, or --batch-file lines that are not ids) need a tokenizer, but "
                    + a.model + " has no tokenizer.json; give --prompt-ids instead");
        }
        GenerationConfig cfg = a.config();
        Device dev;
        try {
            dev = a.device == null ? Isthmus.get().device() : Isthmus.get().device(a.device);
        } catch (IsthmusException e) {
            throw new Failure(2, "--device " + a.device + ": " + firstLine(e));
        }
        Tokenizer tok = null;
        List<int[]> batch = new ArrayList<>();
        try {
            if (Files.isRegularFile(a.model.resolve("tokenizer.json"))) {
                tok = Tokenizer.load(a.model);
            }
            for (Prompt p : a.prompts) {
                batch.add(p.ids() != null ? p.ids()
                        : a.chat ? tok.encodeChat(List.of(Map.of("role", "user", "content", p.text())))
                        : tok.encode(p.text()));
            }
        } catch (IsthmusException e) {
            if (text) {
                throw new Failure(1, "cannot use the tokenizer of " + a.model + ": " + firstLine(e));
            }
            err.println("Generate: ids only, no text: " + firstLine(e)); // token ids always work without it
            tok = null;
            batch.clear();
            a.prompts.forEach(p -> batch.add(p.ids()));
        }
        int longest = 1;
        for (int[] p : batch) {
            longest = Math.max(longest, p.length);
        }
        LlamaModel model;
        try {
            // the KV cache sized for this batch, not for the model's longest context
            LlamaOptions opts = LlamaOptions.defaults().withMaxBatch(batch.size()).withMaxContext(longest + a.maxNewTokens);
            model = LlamaModel.load(a.model, dev, opts);
        } catch (IsthmusException e) {
            throw new Failure(1, "cannot load the model in " + a.model + ": " + firstLine(e));
        }
        try (model) {
            int vocab = model.config().vocabSize();
            for (int i = 0; i < batch.size(); i++) {
                for (int id : batch.get(i)) {
                    if (id >= vocab) {
                        throw new Failure(2, "prompt " + (i + 1) + " holds token id " + id + ", outside the model's "
                                + "vocabulary (0.." + (vocab - 1) + ")");
                    }
                }
            }
            GenerationResult r = model.generate(batch, withStops(cfg, model.config().eosTokenIds(),
                    tok == null ? new int[0] : tok.stopTokens()));
            for (int i = 0; i < r.size(); i++) {
                int[] ids = r.tokens(i);
                StringBuilder line = new StringBuilder();
                for (int j = 0; j < ids.length; j++) {
                    line.append(j == 0 ? "" : ",").append(ids[j]);
                }
                if (tok != null) {
                    line.append('\t').append(escape(tok.decode(ids)));
                }
                out.println(line);
            }
            out.flush();
            err.printf("prompt: %d tokens at %.1f tokens/s; decode: %d tokens in %d steps at %.1f tokens/s (batch %d, %s)%n",
                    r.promptTokens(), r.promptTokensPerSecond(), r.decodeTokens(), r.steps(), r.decodeTokensPerSecond(),
                    r.size(), dev.id());
            if (a.dumpLogits != null) {
                Npy.writeFloat32(a.dumpLogits, r.lastLogits(), r.size(), r.vocabSize());
            }
        } catch (IsthmusException e) {
            throw new Failure(1, "generation failed: " + firstLine(e));
        } catch (IOException e) {
            throw new Failure(1, "cannot write --dump-logits " + a.dumpLogits + " (" + e.getClass().getSimpleName()
                    + ": " + e.getMessage() + ")");
        }
    }

    /** {@code cfg} stopping at the model's end tokens too. */
    static GenerationConfig withStops(GenerationConfig cfg, int[] eos, int[] turnEnds) {
        int[] stops = java.util.stream.IntStream.concat(java.util.Arrays.stream(eos), java.util.Arrays.stream(turnEnds))
                .distinct().toArray();
        return stops.length == 0 ? cfg : cfg.toBuilder().stopTokens(stops).build();
    }

    private static String firstLine(Throwable e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        return (nl < 0 ? m : m.substring(0, nl)) + " [" + e.getClass().getSimpleName() + "]";
    }

    static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
    }
}
