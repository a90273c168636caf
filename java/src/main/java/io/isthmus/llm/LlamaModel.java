package io.isthmus.llm;

import io.isthmus.ClosedBufferException;
import io.isthmus.Device;
import io.isthmus.FormatException;
import io.isthmus.InvalidArgumentException;
import io.isthmus.Isthmus;
import io.isthmus.IsthmusException;
import io.isthmus.RuntimeAccess;
import io.isthmus.spi.LlamaHandle;
import io.isthmus.spi.LlamaSessionHandle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * A Llama-family model (Hugging Face {@code LlamaForCausalLM}; Mistral- and Qwen2-style configs of the
 * same layout) loaded onto a device, generating from batches of prompts.
 *
 * <p>{@link #load} reads a model folder: {@code config.json} and the weights as safetensors
 * ({@code model.safetensors}, or the shards of {@code model.safetensors.index.json}), which go
 * straight from the mapped files into device memory. {@link #generate} prefills the prompts (of any
 * lengths) as batched ops, then runs one step per token, each one call into the runtime (a captured
 * graph replayed there), on a thread the runtime started; tokens stream to a {@link TokenListener}
 * as they come. One generation runs at a time per model (concurrent calls wait their turn).
 * {@link #close()} frees every buffer of the model.
 *
 * <pre>{@code
 * Device dev = Isthmus.get().device();
 * try (LlamaModel model = LlamaModel.load(Path.of("Llama-3.2-1B"), dev)) {
 *     GenerationConfig cfg = GenerationConfig.builder().maxNewTokens(32).build();   // greedy
 *     GenerationResult r = model.generate(List.of(new int[] {128000, 791}, new int[] {128000, 9906, 11}), cfg,
 *             (seq, token) -> System.out.println(seq + ": " + token));
 *     int[] first = r.tokens(0);
 * }
 * }</pre>
 */
public final class LlamaModel implements AutoCloseable {
    private final Path folder;
    private final Device device;
    private final LlamaConfig config;
    private LlamaHandle handle; // null once closed; guarded by this
    private ExecutorService decoder; // the runtime thread generations run on, started at the first one
    private Tokenizer tokenizer;
    private volatile Thread decodeThread; // while a generation runs: the thread running it
    private volatile boolean cancelled;

    private LlamaModel(Path folder, Device device, LlamaHandle handle, LlamaConfig config) {
        this.folder = folder;
        this.device = device;
        this.handle = handle;
        this.config = config;
    }

    /**
     * Loads a model folder onto {@code device} with {@link LlamaOptions#defaults()}.
     *
     * @param folder a Hugging Face model folder ({@code config.json} and safetensors)
     * @param device where the model runs
     * @return the model
     * @throws FormatException if the folder has no {@code config.json}, or a file is damaged
     * @throws InvalidArgumentException if {@code folder} is no folder, or the config asks for what isthmus
     *     cannot run (the message names the field)
     * @throws io.isthmus.OutOfDeviceMemoryException if the device cannot hold the model
     */
    public static LlamaModel load(Path folder, Device device) {
        return load(folder, device, LlamaOptions.defaults());
    }

    /**
     * Loads a model folder onto {@code device}.
     *
     * @param folder a Hugging Face model folder ({@code config.json} and safetensors)
     * @param device where the model runs
     * @param options dtype, batch and context sizes, KV cache layout
     * @return the model
     * @throws FormatException if the folder has no {@code config.json}, or a file is damaged
     * @throws InvalidArgumentException if {@code folder} is no folder, or the config asks for what isthmus
     *     cannot run (the message names the field)
     * @throws io.isthmus.OutOfDeviceMemoryException if the device cannot hold the model
     */
    public static LlamaModel load(Path folder, Device device, LlamaOptions options) {
        if (folder == null || device == null || options == null) {
            throw new InvalidArgumentException("LlamaModel.load(folder, device, options) needs all three, got "
                    + (folder == null ? "folder null" : device == null ? "device null" : "options null")
                    + " (LlamaOptions.defaults() for the defaults)");
        }
        if (!Files.isDirectory(folder)) {
            throw new InvalidArgumentException("LlamaModel.load: " + folder + " is not a folder; expected a Hugging Face "
                    + "model folder (config.json and model.safetensors)");
        }
        if (!Files.isRegularFile(folder.resolve("config.json"))) {
            throw new FormatException("LlamaModel.load: " + folder + " has no config.json; expected a Hugging Face "
                    + "model folder (config.json and model.safetensors)");
        }
        LlamaHandle h = RuntimeAccess.runtime().loadLlama(folder.toString(), RuntimeAccess.handle(device),
                options.toPython());
        try {
            return new LlamaModel(folder, device, h, LlamaConfig.from(h.config()));
        } catch (RuntimeException e) {
            h.close();
            throw e;
        }
    }

    /** @return the model's shape and the limits it was loaded with */
    public LlamaConfig config() {
        return config;
    }

    /** @return the device it runs on */
    public Device device() {
        return device;
    }

    /** @return the folder it was loaded from */
    public Path folder() {
        return folder;
    }

    /** @return whether the folder has a {@code tokenizer.json}, so {@link #tokenizer()} works */
    public boolean hasTokenizer() {
        return Files.isRegularFile(folder.resolve("tokenizer.json"));
    }

    /**
     * @return the folder's tokenizer, made at the first call
     * @throws InvalidArgumentException if the folder has no {@code tokenizer.json}, or the runtime lacks the
     *     {@code tokenizers} package ({@code pip install isthmus[llm]})
     */
    public synchronized Tokenizer tokenizer() {
        open();
        if (tokenizer == null) {
            tokenizer = Tokenizer.load(folder);
        }
        return tokenizer;
    }

    /**
     * Generates for a batch of prompts.
     *
     * @param prompts each prompt's token ids (one sequence of the batch each; lengths may differ)
     * @param config sampling, stopping, whether to return logits
     * @return the generated ids per prompt, the logits when asked, the speed
     * @throws InvalidArgumentException if a prompt is empty or holds an id outside the vocabulary, or the batch
     *     or a sequence is larger than the model was loaded for
     */
    public GenerationResult generate(List<int[]> prompts, GenerationConfig config) {
        return generate(prompts, config, null);
    }

    /**
     * Generates for a batch of prompts, handing each token to {@code listener} as it comes.
     *
     * @param prompts each prompt's token ids (one sequence of the batch each; lengths may differ)
     * @param config sampling, stopping, whether to return logits
     * @param listener called for each generated token on the generating thread, or {@code null}
     * @return the generated ids per prompt, the logits when asked, the speed
     * @throws InvalidArgumentException if a prompt is empty or holds an id outside the vocabulary, the batch
     *     or a sequence is larger than the model was loaded for, or this is called from a listener
     */
    public GenerationResult generate(List<int[]> prompts, GenerationConfig config, TokenListener listener) {
        if (Thread.currentThread() == decodeThread) {
            throw new InvalidArgumentException("LlamaModel.generate was called from a TokenListener of the same model; "
                    + "start the next generation after this one returns");
        }
        if (config == null) {
            throw new InvalidArgumentException("LlamaModel.generate: config is null; use GenerationConfig.defaults()");
        }
        synchronized (this) {
            LlamaHandle h = open();
            int[][] batch = checked(prompts, config);
            if (decoder == null) {
                decoder = Isthmus.get().executor(1);
            }
            cancelled = false;
            Future<GenerationResult> run = decoder.submit(() -> run(h, batch, config, listener));
            try {
                return run.get();
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException r) {
                    throw r;
                }
                if (cause instanceof Error err) {
                    throw err;
                }
                throw new IsthmusException("the generation failed: " + cause);
            } catch (InterruptedException e) {
                cancelled = true; // the generation stops at its next step; close() waits for it
                Thread.currentThread().interrupt();
                throw new IsthmusException("LlamaModel.generate was interrupted; the generation stops at its next step");
            }
        }
    }

    private int[][] checked(List<int[]> prompts, GenerationConfig cfg) {
        if (prompts == null || prompts.isEmpty()) {
            throw new InvalidArgumentException("LlamaModel.generate: no prompts; pass a List<int[]> of one or more "
                    + "prompts' token ids");
        }
        if (prompts.size() > config.maxBatch()) {
            throw new InvalidArgumentException("LlamaModel.generate: " + prompts.size() + " prompts, but the model was "
                    + "loaded for batches of up to " + config.maxBatch() + " (LlamaOptions.withMaxBatch)");
        }
        int[][] batch = new int[prompts.size()][];
        for (int i = 0; i < batch.length; i++) {
            int[] p = prompts.get(i);
            if (p == null || p.length == 0) {
                throw new InvalidArgumentException("LlamaModel.generate: prompts.get(" + i + ") is "
                        + (p == null ? "null" : "empty") + "; every prompt needs at least one token id");
            }
            for (int j = 0; j < p.length; j++) {
                if (p[j] < 0 || p[j] >= config.vocabSize()) {
                    throw new InvalidArgumentException("LlamaModel.generate: prompts.get(" + i + ")[" + j + "] = " + p[j]
                            + " is not a token id of this model (0.." + (config.vocabSize() - 1) + ")");
                }
            }
            long needed = (long) p.length + cfg.maxNewTokens();
            if (config.maxContext() > 0 && needed > config.maxContext()) {
                throw new InvalidArgumentException("LlamaModel.generate: prompts.get(" + i + ") has " + p.length
                        + " tokens; with maxNewTokens " + cfg.maxNewTokens() + " it needs " + needed + " positions, but "
                        + "the model was loaded with maxContext " + config.maxContext() + " (LlamaOptions.withMaxContext)");
            }
            batch[i] = p.clone();
        }
        return batch;
    }

    /** The generation, on the runtime's thread: start, then one crossing per step. */
    private GenerationResult run(LlamaHandle h, int[][] batch, GenerationConfig cfg, TokenListener listener) {
        decodeThread = Thread.currentThread();
        int n = batch.length;
        ByteBuffer out = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder());
        IntBuffer ids = out.asIntBuffer();
        int[][] generated = new int[n][cfg.maxNewTokens()];
        int[] count = new int[n];
        try {
            LlamaSessionHandle session = h.start(batch, cfg.toPython(), cfg.returnLogits(), out);
            try {
                int steps = 0;
                long t0 = System.nanoTime();
                for (int got; (got = session.step()) > 0; steps++) {
                    for (int i = 0; i < got; i++) {
                        int token = ids.get(i);
                        if (token < 0) {
                            continue;
                        }
                        if (count[i] == generated[i].length) { // never, unless the runtime overruns maxNewTokens
                            generated[i] = Arrays.copyOf(generated[i], 2 * count[i] + 1);
                        }
                        generated[i][count[i]++] = token;
                        if (listener != null) {
                            listener.onToken(i, token);
                        }
                    }
                    if (cancelled) {
                        throw new IsthmusException("the generation was interrupted after " + (steps + 1) + " steps");
                    }
                }
                double stepSeconds = (System.nanoTime() - t0) / 1e9;
                float[] logits = cfg.returnLogits() ? session.lastLogits() : null;
                Map<String, Double> stats = session.stats();
                List<int[]> tokens = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    tokens.add(Arrays.copyOf(generated[i], count[i]));
                }
                return new GenerationResult(tokens, logits, config.vocabSize(), stat(stats, "prompt_tokens"),
                        stats.getOrDefault("prompt_seconds", 0.0), stat(stats, "decode_tokens"),
                        stats.getOrDefault("decode_seconds", 0.0), steps, stepSeconds);
            } finally {
                session.close();
            }
        } finally {
            decodeThread = null;
        }
    }

    private static long stat(Map<String, Double> stats, String key) {
        Double v = stats.get(key);
        return v == null ? 0 : Math.round(v);
    }

    private LlamaHandle open() {
        if (handle == null) {
            throw new ClosedBufferException("this LlamaModel (" + folder + ") was closed; load it again");
        }
        return handle;
    }

    /**
     * Frees every buffer of the model and stops its generation thread; waits for a generation under way
     * on another thread. Idempotent.
     *
     * @throws InvalidArgumentException if called from a {@link TokenListener} of this model
     */
    @Override
    public void close() {
        if (Thread.currentThread() == decodeThread) {
            throw new InvalidArgumentException("LlamaModel.close() was called from a TokenListener of the same model; "
                    + "close it after generate returns");
        }
        synchronized (this) {
            if (handle == null) {
                return;
            }
            if (decoder != null) {
                cancelled = true;
                decoder.shutdown();
                try {
                    decoder.awaitTermination(60, TimeUnit.SECONDS); // an interrupted generation's last step
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                decoder = null;
            }
            tokenizer = null;
            LlamaHandle h = handle;
            handle = null;
            h.close();
        }
    }

    @Override
    public String toString() {
        return "LlamaModel(" + folder + " on " + device.id() + ", " + config.numLayers() + " layers, hidden "
                + config.hiddenSize() + ", vocab " + config.vocabSize() + ", " + config.dtype()
                + (handle == null ? ", closed)" : ")");
    }
}
