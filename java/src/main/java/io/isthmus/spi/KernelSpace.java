package io.isthmus.spi;

import java.util.Map;

/**
 * The Java side of a kernel declared tunable from Java ({@link io.isthmus.TunableKernel}): the runtime
 * calls these while tuning (inputs, reference) and to size launches (grid).
 */
public interface KernelSpace {
    /**
     * @param problem named problem sizes
     * @param params tunable values of one config
     * @return {global, local} sizes of the launch
     */
    long[][] grid(Map<String, Long> problem, Map<String, Long> params);

    /**
     * @param problem named problem sizes
     * @param seed seed for the data
     * @return the kernel's buffer arguments as host arrays (float[], double[], int[], long[]), in order
     */
    Object[] inputs(Map<String, Long> problem, long seed);

    /**
     * @param problem named problem sizes
     * @return the scalar arguments that come before the buffers (Integer, Long, Float, Double)
     */
    Object[] scalars(Map<String, Long> problem);

    /**
     * @param inputs the host arrays {@link #inputs} made
     * @return what the output buffer must hold afterwards (an array of its type)
     */
    Object reference(Object[] inputs);
}
