package io.isthmus.llm;

import java.util.Map;

/**
 * A loaded model's shape, from its {@code config.json} (Hugging Face names in the comments).
 *
 * @param vocabSize tokens in the vocabulary ({@code vocab_size})
 * @param hiddenSize width of the residual stream ({@code hidden_size})
 * @param intermediateSize width of the MLP ({@code intermediate_size})
 * @param numLayers decoder layers ({@code num_hidden_layers})
 * @param numHeads query heads ({@code num_attention_heads})
 * @param numKeyValueHeads key/value heads, fewer than {@code numHeads} with grouped-query attention
 *     ({@code num_key_value_heads})
 * @param headDim width of a head ({@code head_dim})
 * @param maxPositionEmbeddings positions the model was trained for ({@code max_position_embeddings})
 * @param tieWordEmbeddings whether the LM head is the embedding ({@code tie_word_embeddings})
 * @param dtype the weights' dtype on the device (NumPy name, e.g. {@code "bfloat16"})
 * @param eosTokenIds the tokens that end a generation by the model's config ({@code eos_token_id}; may be empty)
 * @param maxBatch the most sequences of one generation (the load options')
 * @param maxContext the most positions of one sequence (the load options', or the runtime's choice)
 */
public record LlamaConfig(int vocabSize, int hiddenSize, int intermediateSize, int numLayers, int numHeads,
                          int numKeyValueHeads, int headDim, long maxPositionEmbeddings, boolean tieWordEmbeddings,
                          String dtype, int[] eosTokenIds, int maxBatch, int maxContext) {
    /** Reads the runtime's answer ({@code LlamaHandle.config()}). */
    static LlamaConfig from(Map<String, Object> m) {
        return new LlamaConfig(num(m, "vocab_size"), num(m, "hidden_size"), num(m, "intermediate_size"),
                num(m, "num_hidden_layers"), num(m, "num_attention_heads"), num(m, "num_key_value_heads"),
                num(m, "head_dim"), ((Number) m.getOrDefault("max_position_embeddings", 0L)).longValue(),
                Boolean.TRUE.equals(m.get("tie_word_embeddings")), String.valueOf(m.get("dtype")), ids(m.get("eos_token_id")),
                num(m, "max_batch"), num(m, "max_context"));
    }

    private static int num(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof Number n ? n.intValue() : 0;
    }

    private static int[] ids(Object v) {
        if (v instanceof Number n) {
            return new int[] {n.intValue()};
        }
        if (v instanceof long[] a) {
            int[] out = new int[a.length];
            for (int i = 0; i < a.length; i++) {
                out[i] = (int) a[i];
            }
            return out;
        }
        return new int[0];
    }
}
