package io.isthmus;

import io.isthmus.spi.KernelSpace;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A kernel of your own, declared tunable from Java: its source, its tunable {@code -D} parameters
 * with restrictions, the names of its problem sizes, how a config sizes the launch, and inputs
 * with a reference to check every config against. Tune it with {@code Tuner.of(kernel.name())};
 * {@link #launch} then uses the tuned config (from Java or Python, in any process).
 *
 * <pre>{@code
 * TunableKernel scale = TunableKernel.builder("scale2", SOURCE)   // __kernel void scale2(int n, float* x, float* y)
 *         .tunable("WG", new long[] {32, 64, 128}, 64)
 *         .restriction("WG <= max_work_group_size")
 *         .problem("n")
 *         .grid((p, c) -> new LaunchConfig(new long[] {(p.get("n") + c.get("WG") - 1) / c.get("WG") * c.get("WG")},
 *                                          new long[] {c.get("WG")}))
 *         .scalars(p -> new Object[] {p.get("n").intValue()})
 *         .inputs((p, rng) -> new Object[] {randomFloats(rng, p.get("n")), new float[p.get("n").intValue()]})
 *         .output(1)
 *         .reference(in -> twice((float[]) in[0]))
 *         .declare();
 * Tuner.of("scale2").device(dev).size("n", 4096).budget(3).run();
 * scale.launch(dev, Map.of("n", 4096L), x, y);
 * }</pre>
 */
public final class TunableKernel {
    /** How a config sizes the launch. */
    @FunctionalInterface
    public interface Grid {
        /**
         * @param problem named sizes
         * @param params tunable values
         * @return the launch grid
         */
        LaunchConfig of(Map<String, Long> problem, Map<String, Long> params);
    }

    /** The kernel's buffer arguments as host arrays (float[], double[], int[], long[]), in order. */
    @FunctionalInterface
    public interface Inputs {
        /**
         * @param problem named sizes
         * @param rng seeded random source
         * @return host arrays
         */
        Object[] make(Map<String, Long> problem, Random rng);
    }

    /** The scalar arguments that precede the buffers. */
    @FunctionalInterface
    public interface Scalars {
        /**
         * @param problem named sizes
         * @return Integer, Long, Float or Double values
         */
        Object[] of(Map<String, Long> problem);
    }

    /** What the output buffer must hold once the kernel ran on the given inputs. */
    @FunctionalInterface
    public interface Reference {
        /**
         * @param inputs the host arrays {@link Inputs} made
         * @return an array of the output's type
         */
        Object expected(Object[] inputs);
    }

    private final String name;
    private final String source;
    private final String entry;
    private final Builder spec;

    private TunableKernel(Builder b) {
        this.name = b.name;
        this.source = b.source;
        this.entry = b.entry;
        this.spec = b;
    }

    /**
     * @param name the kernel's name in the tuning database (and its entry point unless {@link Builder#entry})
     * @param source OpenCL C source
     * @return a builder
     */
    public static Builder builder(String name, String source) {
        return new Builder(name, source);
    }

    /** @return the kernel's name in the tuning database */
    public String name() {
        return name;
    }

    /**
     * @param device the device
     * @param problem named sizes
     * @return the config a launch uses: tuned (database), else the defaults
     */
    public Map<String, Long> config(Device device, Map<String, Long> problem) {
        return Tuner.config(name, device, problem, spec.dtype);
    }

    /**
     * Launches with the tuned config: scalars from {@link Builder#scalars}, then {@code buffers}.
     *
     * @param device the device
     * @param problem named sizes
     * @param buffers the buffer arguments
     */
    public void launch(Device device, Map<String, Long> problem, DeviceBuffer... buffers) {
        Map<String, Long> params = config(device, problem);
        Kernel k = device.compile(source, entry, params);
        List<Object> args = new ArrayList<>();
        if (spec.scalars != null) {
            args.addAll(List.of(spec.scalars.of(problem)));
        }
        args.addAll(List.of(buffers));
        k.launch(spec.grid.of(problem, params), args.toArray());
    }

    /** Describes a {@link TunableKernel}; {@link #declare()} registers it with the runtime. */
    public static final class Builder {
        private final String name;
        private final String source;
        private String entry;
        private final Map<String, long[]> tunables = new LinkedHashMap<>();
        private final Map<String, Long> defaults = new LinkedHashMap<>();
        private final List<String> restrictions = new ArrayList<>();
        private String[] problem = new String[0];
        private DType dtype = DType.FLOAT32;
        private Grid grid;
        private Inputs inputs;
        private Scalars scalars;
        private Reference reference;
        private int output = -1;

        private Builder(String name, String source) {
            this.name = name;
            this.source = source;
            this.entry = name;
        }

        /**
         * @param entry the kernel function, if not the name
         * @return this
         */
        public Builder entry(String entry) {
            this.entry = entry;
            return this;
        }

        /**
         * @param tunable a {@code -D} name
         * @param values its values
         * @param dflt its default
         * @return this
         */
        public Builder tunable(String tunable, long[] values, long dflt) {
            tunables.put(tunable, values.clone());
            defaults.put(tunable, dflt);
            return this;
        }

        /**
         * @param expression a Python expression over tunables, sizes, device limits
         * @return this
         */
        public Builder restriction(String expression) {
            restrictions.add(expression);
            return this;
        }

        /**
         * @param names the problem size names
         * @return this
         */
        public Builder problem(String... names) {
            this.problem = names.clone();
            return this;
        }

        /**
         * @param dtype the data's element type
         * @return this
         */
        public Builder dtype(DType dtype) {
            this.dtype = dtype;
            return this;
        }

        /**
         * @param grid how a config sizes the launch
         * @return this
         */
        public Builder grid(Grid grid) {
            this.grid = grid;
            return this;
        }

        /**
         * @param inputs the buffer arguments' host data
         * @return this
         */
        public Builder inputs(Inputs inputs) {
            this.inputs = inputs;
            return this;
        }

        /**
         * @param scalars the scalar arguments before the buffers
         * @return this
         */
        public Builder scalars(Scalars scalars) {
            this.scalars = scalars;
            return this;
        }

        /**
         * @param index which buffer argument the kernel writes
         * @return this
         */
        public Builder output(int index) {
            this.output = index;
            return this;
        }

        /**
         * @param reference what the output must hold
         * @return this
         */
        public Builder reference(Reference reference) {
            this.reference = reference;
            return this;
        }

        /**
         * Registers the kernel with the runtime, so it can be tuned and its tuned configs looked up.
         *
         * @return the kernel
         * @throws InvalidArgumentException if a part is missing
         */
        public TunableKernel declare() {
            if (grid == null || inputs == null || reference == null || output < 0 || tunables.isEmpty()
                    || problem.length == 0) {
                throw new InvalidArgumentException("TunableKernel " + name + " needs tunables, problem names, a grid, "
                        + "inputs, an output index and a reference");
            }
            Builder self = this;
            KernelSpace space = new KernelSpace() {
                @Override
                public long[][] grid(Map<String, Long> p, Map<String, Long> params) {
                    LaunchConfig c = self.grid.of(p, params);
                    return new long[][] {c.global(), c.local() == null ? new long[0] : c.local()};
                }

                @Override
                public Object[] inputs(Map<String, Long> p, long seed) {
                    return self.inputs.make(p, new Random(seed));
                }

                @Override
                public Object[] scalars(Map<String, Long> p) {
                    return self.scalars == null ? new Object[0] : self.scalars.of(p);
                }

                @Override
                public Object reference(Object[] in) {
                    return self.reference.expected(in);
                }
            };
            Isthmus.get().runtime().declare(name, source, entry, tunables, defaults,
                    restrictions.toArray(new String[0]), problem, dtype.pythonName(), output, space);
            return new TunableKernel(this);
        }
    }
}
