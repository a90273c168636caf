package io.isthmus.llm;

import io.isthmus.InvalidArgumentException;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * How {@link LlamaModel#generate} picks tokens and when it stops: an immutable value made by
 * {@link #builder()}. Greedy unless {@code temperature > 0}; then tokens are drawn (on the device)
 * from the temperature-scaled distribution, cut to the {@code topK} most likely tokens (0: all) and
 * to the smallest set whose probability reaches {@code topP}, with {@code seed} making the draws
 * repeatable. A sequence ends at one of {@code stopTokens} (which is returned with it) or after
 * {@code maxNewTokens}.
 *
 * <pre>{@code
 * GenerationConfig cfg = GenerationConfig.builder().maxNewTokens(64).temperature(0.7).topP(0.9).seed(42)
 *         .stopTokens(128001, 128009).build();
 * }</pre>
 */
public final class GenerationConfig {
    private final int maxNewTokens;
    private final double temperature;
    private final int topK;
    private final double topP;
    private final long seed;
    private final int[] stopTokens;
    private final boolean returnLogits;

    private GenerationConfig(Builder b) {
        this.maxNewTokens = b.maxNewTokens;
        this.temperature = b.temperature;
        this.topK = b.topK;
        this.topP = b.topP;
        this.seed = b.seed;
        this.stopTokens = b.stopTokens.clone();
        this.returnLogits = b.returnLogits;
    }

    /** @return a builder with the defaults: 32 new tokens, greedy, no stop tokens */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the defaults: 32 new tokens, greedy, no stop tokens */
    public static GenerationConfig defaults() {
        return builder().build();
    }

    /** @return a builder holding this config's values */
    public Builder toBuilder() {
        return new Builder().maxNewTokens(maxNewTokens).temperature(temperature).topK(topK).topP(topP).seed(seed)
                .stopTokens(stopTokens).returnLogits(returnLogits);
    }

    /** @return the most tokens generated per sequence */
    public int maxNewTokens() {
        return maxNewTokens;
    }

    /** @return the sampling temperature; 0 is greedy */
    public double temperature() {
        return temperature;
    }

    /** @return how many of the most likely tokens are kept before sampling; 0 keeps all */
    public int topK() {
        return topK;
    }

    /** @return the nucleus: the smallest set of tokens whose probability reaches it is kept; 1 keeps all */
    public double topP() {
        return topP;
    }

    /** @return the seed of the draws */
    public long seed() {
        return seed;
    }

    /** @return the tokens that end a sequence (a copy) */
    public int[] stopTokens() {
        return stopTokens.clone();
    }

    /** @return whether the result holds the logits at each prompt's last position */
    public boolean returnLogits() {
        return returnLogits;
    }

    /** @return whether tokens are picked greedily (temperature 0) */
    public boolean greedy() {
        return temperature == 0.0;
    }

    /** The runtime's keyword arguments ({@code isthmus.llm.GenerationConfig}). */
    Map<String, Object> toPython() {
        Map<String, Object> m = new HashMap<>();
        m.put("max_new_tokens", (long) maxNewTokens);
        m.put("temperature", temperature);
        m.put("top_k", (long) topK);
        m.put("top_p", topP);
        m.put("seed", seed);
        m.put("stop_tokens", stopTokens.clone());
        return m;
    }

    @Override
    public String toString() {
        return "GenerationConfig[maxNewTokens=" + maxNewTokens + ", temperature=" + temperature + ", topK=" + topK
                + ", topP=" + topP + ", seed=" + seed + ", stopTokens=" + Arrays.toString(stopTokens)
                + ", returnLogits=" + returnLogits + "]";
    }

    /** Builds a {@link GenerationConfig}; each setter checks its value. */
    public static final class Builder {
        private int maxNewTokens = 32;
        private double temperature = 0.0;
        private int topK = 0;
        private double topP = 1.0;
        private long seed = 0;
        private int[] stopTokens = new int[0];
        private boolean returnLogits;

        private Builder() {
        }

        /**
         * @param value the most tokens generated per sequence, at least 1
         * @return this builder
         * @throws InvalidArgumentException if {@code value < 1}
         */
        public Builder maxNewTokens(int value) {
            if (value < 1) {
                throw new InvalidArgumentException("GenerationConfig.Builder.maxNewTokens(" + value
                        + "): the most new tokens must be >= 1");
            }
            this.maxNewTokens = value;
            return this;
        }

        /**
         * @param value the sampling temperature, {@code >= 0}; 0 is greedy
         * @return this builder
         * @throws InvalidArgumentException if {@code value} is negative, NaN or infinite
         */
        public Builder temperature(double value) {
            if (!(value >= 0.0) || Double.isInfinite(value)) {
                throw new InvalidArgumentException("GenerationConfig.Builder.temperature(" + value
                        + "): the temperature must be a finite number >= 0 (0 is greedy)");
            }
            this.temperature = value;
            return this;
        }

        /**
         * @param value how many of the most likely tokens are kept, {@code >= 0}; 0 keeps all
         * @return this builder
         * @throws InvalidArgumentException if {@code value < 0}
         */
        public Builder topK(int value) {
            if (value < 0) {
                throw new InvalidArgumentException("GenerationConfig.Builder.topK(" + value
                        + "): topK must be >= 0 (0 keeps every token)");
            }
            this.topK = value;
            return this;
        }

        /**
         * @param value the nucleus, in {@code (0, 1]}; 1 keeps all
         * @return this builder
         * @throws InvalidArgumentException if {@code value} is outside {@code (0, 1]}
         */
        public Builder topP(double value) {
            if (!(value > 0.0 && value <= 1.0)) {
                throw new InvalidArgumentException("GenerationConfig.Builder.topP(" + value
                        + "): topP must be in (0, 1] (1 keeps every token)");
            }
            this.topP = value;
            return this;
        }

        /**
         * @param value the seed of the draws, {@code >= 0}
         * @return this builder
         * @throws InvalidArgumentException if {@code value < 0}
         */
        public Builder seed(long value) {
            if (value < 0) {
                throw new InvalidArgumentException("GenerationConfig.Builder.seed(" + value + "): the seed must be >= 0");
            }
            this.seed = value;
            return this;
        }

        /**
         * @param values the tokens that end a sequence (token ids, {@code >= 0})
         * @return this builder
         * @throws InvalidArgumentException if an id is negative
         */
        public Builder stopTokens(int... values) {
            if (values == null) {
                throw new InvalidArgumentException("GenerationConfig.Builder.stopTokens(null): pass no ids for none");
            }
            for (int i = 0; i < values.length; i++) {
                if (values[i] < 0) {
                    throw new InvalidArgumentException("GenerationConfig.Builder.stopTokens: stopTokens[" + i + "] = "
                            + values[i] + " is not a token id (ids are >= 0)");
                }
            }
            this.stopTokens = values.clone();
            return this;
        }

        /**
         * @param value whether the result holds the logits at each prompt's last position
         * @return this builder
         */
        public Builder returnLogits(boolean value) {
            this.returnLogits = value;
            return this;
        }

        /** @return the config */
        public GenerationConfig build() {
            return new GenerationConfig(this);
        }
    }
}
