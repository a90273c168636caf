package io.isthmus;

import io.isthmus.spi.GraphHandle;

/**
 * A captured sequence of launches and device copies, replayed with one call: a CUDA graph on
 * CUDA, a pre-bound enqueue list on OpenCL. Made by {@link Device#capture(Runnable)}; nothing
 * runs while capturing. Arguments are taken when captured; {@link #bind} updates one launch.
 *
 * <pre>{@code
 * try (Graph g = dev.capture(() -> {
 *         scale.launch(LaunchConfig.of(n), x, 2.0f, n);
 *         axpy.launch(0.5, x, y);
 *     })) {
 *     for (int i = 0; i < 100; i++) {
 *         g.launch();
 *     }
 * }
 * }</pre>
 */
public final class Graph implements AutoCloseable {
    private final GraphHandle handle;

    Graph(GraphHandle handle) {
        this.handle = handle;
    }

    /** Replays the captured sequence (asynchronous). */
    public void launch() {
        handle.launch();
    }

    /**
     * Updates argument {@code name} of the {@code step}-th captured kernel launch: a scalar, or a
     * buffer of the same shape and dtype as the captured one.
     *
     * @param step index among the captured kernel launches (copies not counted)
     * @param name parameter name
     * @param value a {@link DeviceBuffer} or a Java number
     * @return this graph
     */
    public Graph bind(int step, String name, Object value) {
        if (name == null) {
            throw new InvalidArgumentException("parameter name must not be null");
        }
        handle.bind(step, name, Kernel.handle(value, name));
        return this;
    }

    /**
     * Updates argument {@code name} in every captured launch whose kernel has a parameter of that
     * name: an op's per-step scalars by the name its documentation gives ({@link Ops#sample}'s
     * {@code seed}, {@code offset}, {@code temperature}), without counting its launches.
     *
     * <pre>{@code
     * try (Graph step = dev.capture(() -> Ops.sample(logits, 0.7, 0, 1.0, 0, 0, tokens))) {
     *     for (long t = 0; t < 100; t++) {
     *         step.bindAll("offset", t).launch();
     *     }
     * }
     * }</pre>
     *
     * @param name parameter name
     * @param value a {@link DeviceBuffer} (the shape of each captured one) or a Java number
     * @return this graph
     * @throws InvalidArgumentException when no captured launch has such a parameter
     */
    public Graph bindAll(String name, Object value) {
        if (name == null) {
            throw new InvalidArgumentException("parameter name must not be null");
        }
        handle.bindAll(name, Kernel.handle(value, name));
        return this;
    }

    /** @return the number of captured steps (launches and copies) */
    public int size() {
        return handle.size();
    }

    /** Releases the graph and the memory its launches hold. Idempotent. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "Graph[" + size() + " steps]";
    }
}
