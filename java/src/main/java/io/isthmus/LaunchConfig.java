package io.isthmus;

import java.util.Arrays;

/**
 * The grid of one kernel launch: global size and optional work-group (local) size, one entry
 * per dimension (1 to 3), mirroring {@code isthmus.LaunchConfig}.
 *
 * <pre>{@code
 * kernel.launch(LaunchConfig.of(1024), x, y, 2.0f);
 * kernel.launch(new LaunchConfig(new long[] {64, 64}, new long[] {16, 16}), a, b);
 * }</pre>
 *
 * @param global global size per dimension, each at least 1
 * @param local work-group size per dimension, or {@code null} to let the runtime choose
 */
public record LaunchConfig(long[] global, long[] local) {

    /**
     * Validates and copies the sizes, so a config is an immutable value.
     *
     * @param global global size per dimension, each at least 1
     * @param local work-group size per dimension, or {@code null} to let the runtime choose
     * @throws LaunchConfigException if a size is missing, not positive, or the ranks differ
     */
    public LaunchConfig {
        if (global == null || global.length < 1 || global.length > 3) {
            throw new LaunchConfigException("global size needs 1 to 3 dimensions, got "
                    + (global == null ? "null" : Arrays.toString(global)));
        }
        for (long g : global) {
            if (g < 1) {
                throw new LaunchConfigException("global sizes must be >= 1, got "
                        + Arrays.toString(global));
            }
        }
        global = global.clone();
        if (local != null) {
            if (local.length != global.length) {
                throw new LaunchConfigException("local size " + Arrays.toString(local)
                        + " must have as many dimensions as global size " + Arrays.toString(global));
            }
            for (long l : local) {
                if (l < 1) {
                    throw new LaunchConfigException("local sizes must be >= 1, got "
                            + Arrays.toString(local));
                }
            }
            local = local.clone();
        }
    }

    /**
     * A config with the given global size and the work-group size left to the runtime.
     *
     * @param global global size per dimension
     * @return the config
     */
    public static LaunchConfig of(long... global) {
        return new LaunchConfig(global, null);
    }

    /** @return a copy of the global size */
    @Override
    public long[] global() {
        return global.clone();
    }

    /** @return a copy of the local size, or {@code null} */
    @Override
    public long[] local() {
        return local == null ? null : local.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LaunchConfig c && Arrays.equals(global, c.global) && Arrays.equals(local, c.local);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(global) + Arrays.hashCode(local);
    }

    @Override
    public String toString() {
        return "LaunchConfig[global=" + Arrays.toString(global) + ", local="
                + (local == null ? "auto" : Arrays.toString(local)) + "]";
    }
}
