package io.isthmus;

import java.util.Locale;

/**
 * How {@link Tuner} searches a kernel's space; each is one of Python's {@code isthmus.tune} strategies.
 *
 * <pre>{@code
 * Tuner.of("softmax").device(dev).size("rows", 64).size("cols", 1000).strategy(Strategy.RANDOM).budget(8).run();
 * }</pre>
 */
public enum Strategy {
    /** Every valid config, in order (small spaces). */
    EXHAUSTIVE,
    /** Configs drawn at random without repeats. */
    RANDOM,
    /** Simulated annealing: a local search that learns from the configs it measured. */
    ANNEAL,
    /** A genetic search: populations of configs crossed and mutated. */
    GENETIC;

    /** @return the strategy's name in Python ({@code "anneal"}, ...) */
    public String pythonName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * @param name a Python strategy name such as {@code "anneal"}
     * @return the strategy
     * @throws InvalidArgumentException if there is no such strategy
     */
    public static Strategy fromPythonName(String name) {
        for (Strategy s : values()) {
            if (s.pythonName().equals(name)) {
                return s;
            }
        }
        throw new InvalidArgumentException("no tuning strategy '" + name + "'; choose one of "
                + java.util.Arrays.toString(values()) + " (Python names in lower case)");
    }
}
