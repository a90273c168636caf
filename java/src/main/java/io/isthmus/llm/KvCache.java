package io.isthmus.llm;

/** How a model keeps the attention keys and values of the sequences it generates. */
public enum KvCache {
    /** Fixed-size pages handed to sequences as they grow (less memory for batches of mixed lengths). */
    PAGED("paged"),
    /** One contiguous slab of {@code maxContext} positions per sequence. */
    CONTIGUOUS("contiguous");

    private final String pythonName;

    KvCache(String pythonName) {
        this.pythonName = pythonName;
    }

    /** @return the runtime's name for it ({@code "paged"}, {@code "contiguous"}) */
    public String pythonName() {
        return pythonName;
    }
}
