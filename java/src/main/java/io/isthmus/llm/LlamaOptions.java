package io.isthmus.llm;

import io.isthmus.DType;
import io.isthmus.InvalidArgumentException;

import java.util.HashMap;
import java.util.Map;

/**
 * How {@link LlamaModel#load} sets a model up on its device: an immutable value; change it with
 * the {@code with...} methods.
 *
 * <pre>{@code
 * LlamaOptions opts = LlamaOptions.defaults().withMaxBatch(8).withMaxContext(4096);
 * }</pre>
 *
 * @param dtype the weights' dtype on the device, or {@code null} for the checkpoint's
 *     ({@code config.json}'s {@code torch_dtype})
 * @param maxBatch the most sequences one {@link LlamaModel#generate} call may hold (sizes the KV cache)
 * @param maxContext the most positions (prompt and generated) of one sequence, or 0 for the runtime's
 *     choice (sizes the KV cache)
 * @param kvCache paged or contiguous KV cache
 * @param pageSize positions per page of a {@link KvCache#PAGED} cache
 */
public record LlamaOptions(DType dtype, int maxBatch, int maxContext, KvCache kvCache, int pageSize) {
    /**
     * Checks the values.
     *
     * @throws InvalidArgumentException if a value is out of range
     */
    public LlamaOptions {
        if (maxBatch < 1) {
            throw new InvalidArgumentException("LlamaOptions.maxBatch must be >= 1, got " + maxBatch);
        }
        if (maxContext < 0) {
            throw new InvalidArgumentException("LlamaOptions.maxContext must be >= 1 (or 0 for the runtime's choice), got "
                    + maxContext);
        }
        if (kvCache == null) {
            throw new InvalidArgumentException("LlamaOptions.kvCache must be KvCache.PAGED or KvCache.CONTIGUOUS, got null");
        }
        if (pageSize < 1) {
            throw new InvalidArgumentException("LlamaOptions.pageSize must be >= 1, got " + pageSize);
        }
    }

    /** @return the checkpoint's dtype, batches of up to 32, the runtime's context, a paged cache of 16-position pages */
    public static LlamaOptions defaults() {
        return new LlamaOptions(null, 32, 0, KvCache.PAGED, 16);
    }

    /**
     * @param value the weights' dtype on the device, or {@code null} for the checkpoint's
     * @return a copy with it
     */
    public LlamaOptions withDtype(DType value) {
        return new LlamaOptions(value, maxBatch, maxContext, kvCache, pageSize);
    }

    /**
     * @param value the most sequences of one generation
     * @return a copy with it
     */
    public LlamaOptions withMaxBatch(int value) {
        return new LlamaOptions(dtype, value, maxContext, kvCache, pageSize);
    }

    /**
     * @param value the most positions of one sequence, 0 for the runtime's choice
     * @return a copy with it
     */
    public LlamaOptions withMaxContext(int value) {
        return new LlamaOptions(dtype, maxBatch, value, kvCache, pageSize);
    }

    /**
     * @param value the KV cache's layout
     * @return a copy with it
     */
    public LlamaOptions withKvCache(KvCache value) {
        return new LlamaOptions(dtype, maxBatch, maxContext, value, pageSize);
    }

    /**
     * @param value positions per page of a paged cache
     * @return a copy with it
     */
    public LlamaOptions withPageSize(int value) {
        return new LlamaOptions(dtype, maxBatch, maxContext, kvCache, value);
    }

    /** The runtime's keyword arguments ({@code isthmus.llm.LlamaModel.load}). */
    Map<String, Object> toPython() {
        Map<String, Object> m = new HashMap<>();
        if (dtype != null) {
            m.put("dtype", dtype.pythonName());
        }
        m.put("max_batch", (long) maxBatch);
        if (maxContext > 0) {
            m.put("max_context", (long) maxContext);
        }
        m.put("kv_cache", kvCache.pythonName());
        m.put("page_size", (long) pageSize);
        return m;
    }
}
