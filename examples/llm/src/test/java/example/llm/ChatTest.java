package example.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.isthmus.Device;
import io.isthmus.Isthmus;
import io.isthmus.llm.GenerationConfig;
import io.isthmus.llm.GenerationResult;
import io.isthmus.llm.LlamaModel;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.StringJoiner;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chat's streaming on a tiny random model in Hugging Face format that the test writes itself
 * (config.json and model.safetensors, float32), on the real runtime: surefire forks this JVM through
 * the bin/java of `isthmus jvm-home`.
 */
class ChatTest {
    static final int VOCAB = 97;
    static final int HIDDEN = 32;
    static final int HEADS = 4;
    static final int KV_HEADS = 2;
    static final int HEAD_DIM = HIDDEN / HEADS;
    static final int INTERMEDIATE = 48;
    static final int LAYERS = 2;

    @TempDir
    Path dir;

    /** Writes a tiny random Llama model folder: tensors of N(0, 1/fan_in), norms near 1. */
    static Path writeTinyLlama(Path dir, long seed) throws IOException {
        Random rng = new Random(seed);
        Map<String, float[]> tensors = new LinkedHashMap<>();
        Map<String, int[]> shapes = new LinkedHashMap<>();
        put(tensors, shapes, rng, "model.embed_tokens.weight", 1.0, VOCAB, HIDDEN);
        for (int l = 0; l < LAYERS; l++) {
            String p = "model.layers." + l + ".";
            norm(tensors, shapes, rng, p + "input_layernorm.weight");
            put(tensors, shapes, rng, p + "self_attn.q_proj.weight", 1 / Math.sqrt(HIDDEN), HEADS * HEAD_DIM, HIDDEN);
            put(tensors, shapes, rng, p + "self_attn.k_proj.weight", 1 / Math.sqrt(HIDDEN), KV_HEADS * HEAD_DIM, HIDDEN);
            put(tensors, shapes, rng, p + "self_attn.v_proj.weight", 1 / Math.sqrt(HIDDEN), KV_HEADS * HEAD_DIM, HIDDEN);
            put(tensors, shapes, rng, p + "self_attn.o_proj.weight", 1 / Math.sqrt(HIDDEN), HIDDEN, HEADS * HEAD_DIM);
            norm(tensors, shapes, rng, p + "post_attention_layernorm.weight");
            put(tensors, shapes, rng, p + "mlp.gate_proj.weight", 1 / Math.sqrt(HIDDEN), INTERMEDIATE, HIDDEN);
            put(tensors, shapes, rng, p + "mlp.up_proj.weight", 1 / Math.sqrt(HIDDEN), INTERMEDIATE, HIDDEN);
            put(tensors, shapes, rng, p + "mlp.down_proj.weight", 1 / Math.sqrt(INTERMEDIATE), HIDDEN, INTERMEDIATE);
        }
        norm(tensors, shapes, rng, "model.norm.weight");
        put(tensors, shapes, rng, "lm_head.weight", 3 / Math.sqrt(HIDDEN), VOCAB, HIDDEN);

        Files.writeString(dir.resolve("config.json"), "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": "
                + "\"llama\", \"vocab_size\": " + VOCAB + ", \"hidden_size\": " + HIDDEN + ", \"intermediate_size\": "
                + INTERMEDIATE + ", \"num_hidden_layers\": " + LAYERS + ", \"num_attention_heads\": " + HEADS
                + ", \"num_key_value_heads\": " + KV_HEADS + ", \"hidden_act\": \"silu\", \"rms_norm_eps\": 1e-5, "
                + "\"rope_theta\": 10000.0, \"tie_word_embeddings\": false, \"max_position_embeddings\": 256, "
                + "\"torch_dtype\": \"float32\"}");
        StringJoiner header = new StringJoiner(",", "{", "}");
        long at = 0;
        for (Map.Entry<String, float[]> e : tensors.entrySet()) {
            int[] s = shapes.get(e.getKey());
            String shape = s.length == 1 ? "[" + s[0] + "]" : "[" + s[0] + "," + s[1] + "]";
            long end = at + 4L * e.getValue().length;
            header.add("\"" + e.getKey() + "\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[" + at + ","
                    + end + "]}");
            at = end;
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer file = ByteBuffer.allocate(8 + json.length + (int) at).order(ByteOrder.LITTLE_ENDIAN);
        file.putLong(json.length).put(json);
        tensors.values().forEach(t -> {
            for (float v : t) {
                file.putFloat(v);
            }
        });
        Files.write(dir.resolve("model.safetensors"), file.array());
        return dir;
    }

    private static void put(Map<String, float[]> tensors, Map<String, int[]> shapes, Random rng, String name,
                            double scale, int rows, int cols) {
        float[] t = new float[rows * cols];
        for (int i = 0; i < t.length; i++) {
            t[i] = (float) (rng.nextGaussian() * scale);
        }
        tensors.put(name, t);
        shapes.put(name, new int[] {rows, cols});
    }

    private static void norm(Map<String, float[]> tensors, Map<String, int[]> shapes, Random rng, String name) {
        float[] t = new float[HIDDEN];
        for (int i = 0; i < t.length; i++) {
            t[i] = (float) (1 + 0.1 * rng.nextGaussian());
        }
        tensors.put(name, t);
        shapes.put(name, new int[] {HIDDEN});
    }

    @Test
    void tokensStreamAsTheyComeAndGreedyStartsAtTheArgmax() throws IOException {
        Device dev = Isthmus.get().device();
        long before = Isthmus.get().liveBuffers();
        try (LlamaModel model = LlamaModel.load(writeTinyLlama(dir, 5), dev)) {
            int[] prompt = Chat.prompt("3, 14, 15, 92, 65", null);
            assertArrayEquals(new int[] {3, 14, 15, 92, 65}, prompt);
            GenerationConfig cfg = GenerationConfig.builder().maxNewTokens(12).returnLogits(true).build();
            StringBuilder streamed = new StringBuilder();
            GenerationResult r = Chat.stream(model, null, prompt, cfg, streamed::append);
            int[] ids = r.tokens(0);
            assertEquals(12, ids.length);
            StringJoiner expected = new StringJoiner(",");
            for (int id : ids) {
                assertTrue(id >= 0 && id < VOCAB, "token " + id);
                expected.add(Integer.toString(id));
            }
            assertEquals(expected.toString(), streamed.toString());
            float[] logits = r.lastLogits(0);
            int best = 0;
            for (int v = 1; v < VOCAB; v++) {
                best = logits[v] > logits[best] ? v : best;
            }
            assertEquals(best, ids[0], "greedy's first token is the argmax of the prompt's last logits");
            assertArrayEquals(ids, Chat.stream(model, null, prompt, cfg, piece -> { }).tokens(0), "greedy repeats");
        }
        assertEquals(before, Isthmus.get().liveBuffers(), "close() frees every buffer");
    }
}
