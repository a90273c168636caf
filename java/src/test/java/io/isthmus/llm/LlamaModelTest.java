package io.isthmus.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.isthmus.ClosedBufferException;
import io.isthmus.Device;
import io.isthmus.FormatException;
import io.isthmus.InvalidArgumentException;
import io.isthmus.Isthmus;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LlamaModel on tiny random checkpoints that tests/crosslang writes with
 * {@code isthmus.llm.testing.write_random_llama} (tag {@code llama-model}: their folders arrive as the
 * system properties {@code isthmus.test.llama.bf16}, a bf16 GQA model with an LM head, and
 * {@code isthmus.test.llama.f32}, a tied f32 model with llama3 rope scaling). What Python's model
 * computes is checked against it in tests/crosslang/test_llm_crosslang.py; here: what the Java side
 * adds (batching, streaming, stopping, threads, errors, close).
 */
@Tag("llama-model")
class LlamaModelTest {
    private static Device dev;
    private static LlamaModel bf16;
    private static LlamaModel f32;

    @TempDir
    Path tmp;

    @BeforeAll
    static void load() {
        assumeTrue(Isthmus.isAttached() && System.getProperty("isthmus.test.llama.bf16") != null,
                "needs the runtime and the tiny models: run through tests/crosslang (tag llama-model)");
        dev = Isthmus.get().device(System.getProperty("isthmus.test.device", Isthmus.get().device().id()));
        bf16 = LlamaModel.load(Path.of(System.getProperty("isthmus.test.llama.bf16")), dev,
                LlamaOptions.defaults().withMaxBatch(4).withMaxContext(64));
        f32 = LlamaModel.load(Path.of(System.getProperty("isthmus.test.llama.f32")), dev,
                LlamaOptions.defaults().withMaxBatch(4).withMaxContext(64).withKvCache(KvCache.CONTIGUOUS));
    }

    @AfterAll
    static void close() {
        if (bf16 != null) {
            bf16.close();
        }
        if (f32 != null) {
            f32.close();
        }
    }

    private static int[] randomPrompt(Random rng, int length, int vocab) {
        int[] p = new int[length];
        for (int i = 0; i < length; i++) {
            p[i] = rng.nextInt(vocab);
        }
        return p;
    }

    private static GenerationConfig greedy(int n) {
        return GenerationConfig.builder().maxNewTokens(n).build();
    }

    @Test
    void configIsTheCheckpointsAndTheLoadOptions() {
        LlamaConfig c = bf16.config();
        assertTrue(c.vocabSize() > 1 && c.hiddenSize() > 0 && c.numLayers() > 0, c.toString());
        assertEquals(0, c.numHeads() % c.numKeyValueHeads());
        assertTrue(c.numKeyValueHeads() < c.numHeads(), "the bf16 model has grouped-query attention");
        assertEquals("bfloat16", c.dtype());
        assertEquals(4, c.maxBatch());
        assertEquals(64, c.maxContext());
        assertTrue(f32.config().tieWordEmbeddings());
        assertEquals("float32", f32.config().dtype());
    }

    @Test
    void aPromptInABatchGeneratesWhatItGeneratesAlone() {
        Random rng = new Random();
        for (LlamaModel m : List.of(bf16, f32)) {
            int vocab = m.config().vocabSize();
            List<int[]> prompts = List.of(randomPrompt(rng, 7, vocab), randomPrompt(rng, 1, vocab),
                    randomPrompt(rng, 13, vocab));
            GenerationConfig cfg = GenerationConfig.builder().maxNewTokens(6).returnLogits(true).build();
            GenerationResult together = m.generate(prompts, cfg);
            assertEquals(3, together.size());
            for (int i = 0; i < prompts.size(); i++) {
                GenerationResult alone = m.generate(List.of(prompts.get(i)), cfg);
                float[] a = alone.lastLogits(0);
                float[] t = together.lastLogits(i);
                assertEquals(vocab, a.length);
                float tol = m == f32 ? 1e-4f : 3e-2f;
                for (int v = 0; v < vocab; v++) {
                    assertEquals(a[v], t[v], tol * Math.max(1f, Math.abs(a[v])), m + " prompt " + i + " logit " + v);
                }
                if (m == f32) { // bf16: a near tie may go either way in a batch of another size
                    assertArrayEquals(alone.tokens(0), together.tokens(i), "prompt " + i);
                } else {
                    assertEquals(alone.tokens(0)[0], together.tokens(i)[0], "prompt " + i + "'s first token");
                }
                assertEquals(6, together.tokens(i).length);
            }
        }
    }

    @Test
    void theGreedyFirstTokenIsTheArgmaxOfTheLastLogits() {
        Random rng = new Random();
        int vocab = f32.config().vocabSize();
        GenerationResult r = f32.generate(List.of(randomPrompt(rng, 5, vocab), randomPrompt(rng, 9, vocab)),
                GenerationConfig.builder().maxNewTokens(1).returnLogits(true).build());
        for (int i = 0; i < 2; i++) {
            float[] l = r.lastLogits(i);
            int best = 0;
            for (int v = 1; v < vocab; v++) {
                best = l[v] > l[best] ? v : best;
            }
            assertEquals(best, r.tokens(i)[0]);
        }
        assertEquals(2L * vocab, r.lastLogits().length);
    }

    @Test
    void tokensStreamToTheListenerOnAnIsthmusThreadInStepOrder() {
        Random rng = new Random();
        int vocab = bf16.config().vocabSize();
        List<int[]> prompts = List.of(randomPrompt(rng, 4, vocab), randomPrompt(rng, 11, vocab));
        List<List<Integer>> streamed = List.of(Collections.synchronizedList(new ArrayList<>()),
                Collections.synchronizedList(new ArrayList<>()));
        Set<String> threads = ConcurrentHashMap.newKeySet();
        GenerationResult r = bf16.generate(prompts, greedy(9), (seq, token) -> {
            streamed.get(seq).add(token);
            threads.add(Thread.currentThread().getName());
        });
        for (int i = 0; i < 2; i++) {
            assertArrayEquals(r.tokens(i), streamed.get(i).stream().mapToInt(Integer::intValue).toArray());
        }
        assertEquals(1, threads.size(), "one generating thread: " + threads);
        assertNotEquals(Thread.currentThread().getName(), threads.iterator().next(), "not the caller's thread");
        assertEquals(9, r.steps());
        assertEquals(15, r.promptTokens());
        assertTrue(r.promptTokensPerSecond() > 0 && r.decodeTokensPerSecond() > 0, r.toString());
        assertFalse(r.hasLogits());
        assertThrows(InvalidArgumentException.class, () -> r.lastLogits(0));
    }

    @Test
    void aStopTokenEndsItsSequenceOnlyAndIsReturned() {
        Random rng = new Random();
        int vocab = f32.config().vocabSize();
        List<int[]> prompts = List.of(randomPrompt(rng, 6, vocab), randomPrompt(rng, 3, vocab));
        GenerationResult free = f32.generate(prompts, greedy(8));
        int[] first = free.tokens(0);
        int stop = first[3];
        int at = 0;
        while (first[at] != stop) {
            at++;
        }
        GenerationResult stopped = f32.generate(prompts, greedy(8).toBuilder().stopTokens(stop).build());
        assertArrayEquals(java.util.Arrays.copyOf(first, at + 1), stopped.tokens(0));
        int[] other = free.tokens(1);
        int end = 0;
        while (end < other.length && other[end] != stop) {
            end++;
        }
        assertArrayEquals(java.util.Arrays.copyOf(other, Math.min(other.length, end + 1)), stopped.tokens(1));
    }

    @Test
    void samplingWithASeedRepeatsAndTheSeedMatters() {
        Random rng = new Random();
        int vocab = bf16.config().vocabSize();
        List<int[]> prompts = List.of(randomPrompt(rng, 5, vocab), randomPrompt(rng, 2, vocab));
        GenerationConfig cfg = GenerationConfig.builder().maxNewTokens(12).temperature(5.0).topK(200).topP(0.99)
                .seed(7).build();
        GenerationResult a = bf16.generate(prompts, cfg);
        GenerationResult b = bf16.generate(prompts, cfg);
        GenerationResult c = bf16.generate(prompts, cfg.toBuilder().seed(8).build());
        for (int i = 0; i < 2; i++) {
            assertArrayEquals(a.tokens(i), b.tokens(i));
            for (int t : a.tokens(i)) {
                assertTrue(t >= 0 && t < vocab);
            }
        }
        assertFalse(java.util.Arrays.equals(a.tokens(0), c.tokens(0)) && java.util.Arrays.equals(a.tokens(1), c.tokens(1)),
                "24 tokens drawn at temperature 5 came out the same for seeds 7 and 8");
        GenerationResult k1 = bf16.generate(prompts, cfg.toBuilder().topK(1).build());
        GenerationResult greedy = bf16.generate(prompts, greedy(12));
        assertEquals(greedy.tokens(0)[0], k1.tokens(0)[0], "top-k 1 is the argmax");
    }

    @Test
    void badPromptsAndConfigsAreInvalidArgumentsInJavaTerms() {
        int vocab = bf16.config().vocabSize();
        GenerationConfig cfg = greedy(4);
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> bf16.generate(List.of(new int[] {1, vocab}), cfg));
        assertTrue(e.getMessage().contains("prompts.get(0)[1] = " + vocab), e.getMessage());
        e = assertThrows(InvalidArgumentException.class, () -> bf16.generate(List.of(), cfg));
        assertTrue(e.getMessage().contains("no prompts"), e.getMessage());
        e = assertThrows(InvalidArgumentException.class, () -> bf16.generate(List.of(new int[0]), cfg));
        assertTrue(e.getMessage().contains("prompts.get(0) is empty"), e.getMessage());
        List<int[]> five = Collections.nCopies(5, new int[] {1});
        e = assertThrows(InvalidArgumentException.class, () -> bf16.generate(five, cfg));
        assertTrue(e.getMessage().contains("LlamaOptions.withMaxBatch"), e.getMessage());
        e = assertThrows(InvalidArgumentException.class, () -> bf16.generate(List.of(new int[61]), cfg));
        assertTrue(e.getMessage().contains("maxContext 64"), e.getMessage());
        assertThrows(InvalidArgumentException.class, () -> bf16.generate(List.of(new int[] {1}), null));
        e = assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().topP(1.5));
        assertTrue(e.getMessage().startsWith("GenerationConfig.Builder.topP(1.5)"), e.getMessage());
        assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().maxNewTokens(0));
        assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().temperature(-1));
        assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().temperature(Double.NaN));
        assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().topK(-1));
        assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().seed(-3));
        assertThrows(InvalidArgumentException.class, () -> GenerationConfig.builder().stopTokens(2, -1));
        assertThrows(InvalidArgumentException.class, () -> LlamaOptions.defaults().withMaxBatch(0));
        assertThrows(InvalidArgumentException.class, () -> LlamaOptions.defaults().withKvCache(null));
    }

    @Test
    void aListenerThatThrowsEndsTheGenerationAndTheModelGoesOn() {
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> bf16.generate(List.of(new int[] {3, 4}), greedy(10), (seq, token) -> {
                    throw new IllegalStateException("listener gave up");
                }));
        assertEquals("listener gave up", thrown.getMessage());
        InvalidArgumentException nested = assertThrows(InvalidArgumentException.class,
                () -> bf16.generate(List.of(new int[] {3}), greedy(2), (seq, token) -> bf16.generate(
                        List.of(new int[] {1}), greedy(1))));
        assertTrue(nested.getMessage().contains("from a TokenListener"), nested.getMessage());
        assertEquals(2, bf16.generate(List.of(new int[] {3, 4}), greedy(2)).tokens(0).length);
    }

    @Test
    void badFoldersAreTypedErrorsAndCloseFreesEverything() throws IOException {
        assertThrows(InvalidArgumentException.class, () -> LlamaModel.load(tmp.resolve("missing"), dev));
        FormatException noConfig = assertThrows(FormatException.class, () -> LlamaModel.load(tmp, dev));
        assertTrue(noConfig.getMessage().contains("no config.json"), noConfig.getMessage());
        Path gpt2 = Files.createDirectories(tmp.resolve("gpt2"));
        Files.writeString(gpt2.resolve("config.json"), "{\"architectures\": [\"GPT2LMHeadModel\"], "
                + "\"model_type\": \"gpt2\", \"vocab_size\": 10}");
        InvalidArgumentException wrong = assertThrows(InvalidArgumentException.class, () -> LlamaModel.load(gpt2, dev));
        assertTrue(wrong.getMessage().contains("model_type"), wrong.getMessage());
        assertThrows(InvalidArgumentException.class, () -> LlamaModel.load(tmp, dev, null));

        long before = Isthmus.get().liveBuffers();
        long memory = dev.memoryInUse();
        LlamaModel m = LlamaModel.load(bf16.folder(), dev, LlamaOptions.defaults().withMaxBatch(2).withMaxContext(32));
        assertTrue(Isthmus.get().liveBuffers() > before);
        m.generate(List.of(new int[] {1, 2, 3}), greedy(3));
        m.close();
        m.close();
        assertEquals(before, Isthmus.get().liveBuffers());
        // (the runtime may keep a few bytes of its own per device, e.g. an op's scratch made at first use)
        assertTrue(dev.memoryInUse() - memory < 4096, "device memory held after close: " + (dev.memoryInUse() - memory)
                + " bytes");
        assertThrows(ClosedBufferException.class, () -> m.generate(List.of(new int[] {1}), greedy(1)));
    }

    @Test
    void withoutATokenizerJsonThereIsNoTokenizer() {
        assertFalse(bf16.hasTokenizer());
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, bf16::tokenizer);
        assertTrue(e.getMessage().contains("no tokenizer.json"), e.getMessage());
        assertSame(bf16.config(), bf16.config());
    }
}
