package io.isthmus;

import io.isthmus.spi.TuneRun;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Tunes a library kernel's launch parameters on a device and stores the best config in the
 * tuning database, which every later launch uses, from Java or Python, in any process. The
 * same call as Python's {@code isthmus.tune(kernel, device, problem, strategy, budget)}.
 *
 * <pre>{@code
 * Tuner.Result r = Tuner.of("gemm").device(dev).size("m", 512).size("n", 512).size("k", 512)
 *         .strategy(Strategy.ANNEAL).budget(40).run();
 * System.out.println(r.best() + " " + r.bestMs() + " ms, " + r.speedup() + "x over the default");
 * Map<String, Long> used = Tuner.config("gemm", dev, Map.of("m", 512L, "n", 512L, "k", 512L), DType.FLOAT32);
 * // what Ops.gemm(x, w, ...) with transB on bfloat16 launches: the tensor-core kernel compiled for it
 * Tuner.of("gemm").device(dev).dtype(DType.BFLOAT16).flag("trans_b", true).size("m", 16).size("n", 4096)
 *         .size("k", 4096).budget(40).run();
 * }</pre>
 *
 * <p>Problem sizes are named: {@code n} for axpy, sum and max; {@code rows}, {@code cols} for
 * softmax and transpose; {@code m}, {@code n}, {@code k} for gemm.
 */
public final class Tuner {
    private final String kernel;
    private final Map<String, Long> problem = new LinkedHashMap<>();
    private final Map<String, Boolean> flags = new LinkedHashMap<>();
    private Device device;
    private DType dtype = DType.FLOAT32;
    private Strategy strategy = Strategy.ANNEAL;
    private int budget;
    private double seconds;
    private long seed;

    private Tuner(String kernel) {
        this.kernel = kernel;
    }

    /**
     * @param kernel a library kernel: axpy, sum, max, softmax, transpose, gemm
     * @return a tuner for it (on the default device, float32, anneal, budget 50 configs)
     */
    public static Tuner of(String kernel) {
        if (kernel == null) {
            throw new InvalidArgumentException("kernel name must not be null");
        }
        return new Tuner(kernel);
    }

    /**
     * @param device the device to tune on
     * @return this
     */
    public Tuner device(Device device) {
        this.device = device;
        return this;
    }

    /**
     * @param name a problem size name
     * @param value its value
     * @return this
     */
    public Tuner size(String name, long value) {
        require(name, "problem size name");
        problem.put(name, value);
        return this;
    }

    /**
     * A variant flag of the op's call, as Python's {@code isthmus.tune(..., trans_b=True)}: the
     * tuner tunes (and stores under its own key) the kernel that the call with this flag launches.
     *
     * @param name the flag as the op's Python call spells it: {@code "trans_a"}, {@code "trans_b"} for gemm
     * @param value whether it is set
     * @return this
     * @throws InvalidArgumentException (at {@link #run}) for a flag the op does not have
     */
    public Tuner flag(String name, boolean value) {
        require(name, "flag name");
        flags.put(name, value);
        return this;
    }

    /**
     * @param dtype the element type
     * @return this
     */
    public Tuner dtype(DType dtype) {
        require(dtype, "dtype");
        this.dtype = dtype;
        return this;
    }

    /**
     * @param strategy how to search
     * @return this
     */
    public Tuner strategy(Strategy strategy) {
        require(strategy, "strategy");
        this.strategy = strategy;
        return this;
    }

    /**
     * @param evaluations distinct configs to evaluate, at least 1 (0: the default, 50 or the whole space
     *     when smaller); below 0 {@link #run()} throws InvalidArgumentException
     * @return this
     */
    public Tuner budget(int evaluations) {
        this.budget = evaluations;
        return this;
    }

    /**
     * @param seconds time limit of the search (0: none)
     * @return this
     */
    public Tuner seconds(double seconds) {
        this.seconds = seconds;
        return this;
    }

    /**
     * @param seed the seed that makes the search reproducible
     * @return this
     */
    public Tuner seed(long seed) {
        this.seed = seed;
        return this;
    }

    /**
     * Runs the search; every evaluated config is stored in the tuning database.
     *
     * @return what it found
     * @throws InvalidArgumentException for an unknown kernel, strategy or wrong problem sizes
     */
    public Result run() {
        Isthmus rt = Isthmus.get();
        Device dev = device != null ? device : rt.device();
        TuneRun run = rt.runtime().tune(kernel, dev.handle(), sizes(problem), dtype.pythonName(), strategy.pythonName(),
                budget, seconds, seed, Map.copyOf(flags));
        return new Result(run.kernel(), run.device(), Map.copyOf(run.best()), run.bestMs(),
                Map.copyOf(run.defaults()), run.defaultMs(), Map.copyOf(run.byStatus()), run.evaluations(),
                run.spaceSize());
    }

    /**
     * The launch parameters a launch of {@code kernel} at {@code problem} uses on {@code device}:
     * the tuning database (exact, nearest bucket, same model), else the kernel's defaults.
     *
     * @param kernel a library kernel
     * @param device the device
     * @param problem named problem sizes
     * @param dtype element type
     * @return tunable name to value
     */
    public static Map<String, Long> config(String kernel, Device device, Map<String, Long> problem, DType dtype) {
        require(kernel, "kernel name");
        require(device, "device");
        require(dtype, "dtype");
        return Map.copyOf(Isthmus.get().runtime().tunedConfig(kernel, device.handle(), sizes(problem),
                dtype.pythonName()));
    }

    private static void require(Object value, String what) {
        if (value == null) {
            throw new InvalidArgumentException(what + " must not be null");
        }
    }

    /** {@code problem} checked (no null map, name or size) and copied. */
    private static Map<String, Long> sizes(Map<String, Long> problem) {
        require(problem, "problem sizes");
        for (Map.Entry<String, Long> e : problem.entrySet()) {
            if (e.getKey() == null || e.getValue() == null) {
                throw new InvalidArgumentException("problem sizes must not hold a null name or size, got "
                        + e.getKey() + "=" + e.getValue());
            }
        }
        return Map.copyOf(problem);
    }

    /**
     * What a tuning run found.
     *
     * @param kernel the kernel
     * @param device the device id
     * @param best the fastest correct config
     * @param bestMs its median time in milliseconds
     * @param defaults the default config
     * @param defaultMs its median time, NaN if it failed
     * @param evaluationsByStatus counts per status (ok, compile_error, launch_error, timeout, wrong)
     * @param evaluations configs evaluated
     * @param spaceSize valid configs in the space
     */
    public record Result(String kernel, String device, Map<String, Long> best, double bestMs,
                         Map<String, Long> defaults, double defaultMs, Map<String, Long> evaluationsByStatus,
                         int evaluations, int spaceSize) {
        /** @return default time over best time (1 when the default failed) */
        public double speedup() {
            return Double.isNaN(defaultMs) || !(bestMs > 0) ? 1.0 : defaultMs / bestMs;
        }
    }
}
