package io.isthmus.spi;

import java.nio.ByteBuffer;
import java.util.Map;

/** The runtime as a whole: device discovery, library operations, threads. */
public interface Runtime {
    /**
     * @return every device of every available backend
     */
    DeviceHandle[] devices();

    /**
     * @param id a device id such as {@code "opencl:0"}, or {@code null} for the default device
     * @return the device
     */
    DeviceHandle device(String id);

    /**
     * Runs a library op (Python's {@code isthmus.ops.NAME}) on the device its buffers live on, in
     * one crossing: the result comes back with its shape and dtype.
     *
     * @param name the op, e.g. {@code "softmax"}
     * @param args the op's positional arguments: {@link BufferHandle}s and boxed Java numbers
     * @param out the buffer to write the result into ({@code out=}), or {@code null}
     * @param options the op's keyword arguments (booleans, numbers, strings, handles), or {@code null}
     * @return the result, or {@code null} when the op returns nothing
     */
    OpResult op(String name, Object[] args, BufferHandle out, Map<String, Object> options);

    /**
     * Resolves an op of the runtime's registry (a library op, or one registered in Python with
     * {@code isthmus.ops.registry.register}) once; the handle runs it on the device its buffers
     * live on, one crossing a call, with no name to pass ({@link io.isthmus.Ops} keeps one per name).
     *
     * @param name the op, e.g. {@code "softmax"}
     * @return the op
     * @throws io.isthmus.InvalidArgumentException if no op is registered under {@code name}
     */
    OpHandle library(String name);

    /**
     * Tunes a library kernel (Python's {@code isthmus.tune}) and stores the results in the tuning database.
     *
     * @param kernel library kernel name
     * @param device the device
     * @param problem named problem sizes
     * @param dtype Python dtype name
     * @param strategy exhaustive, random or anneal
     * @param budget distinct configs to evaluate, 0 for the default
     * @param seconds time limit, 0 for none
     * @param seed search seed
     * @param flags the op's variant flags (trans_a, trans_b for gemm) by name
     * @return the finished run
     */
    TuneRun tune(String kernel, DeviceHandle device, Map<String, Long> problem, String dtype, String strategy,
                 int budget, double seconds, long seed, Map<String, Boolean> flags);

    /**
     * @param kernel library kernel name
     * @param device the device
     * @param problem named problem sizes
     * @param dtype Python dtype name
     * @return the launch parameters a launch uses (tuning database, else defaults)
     */
    Map<String, Long> tunedConfig(String kernel, DeviceHandle device, Map<String, Long> problem, String dtype);

    /**
     * Declares a kernel of the user's own tunable (Python's {@code isthmus.tune.declare}).
     *
     * @param name kernel name in the tuning database
     * @param source OpenCL C source
     * @param entry the kernel function
     * @param tunables tunable name to its values
     * @param defaults tunable name to its default
     * @param restrictions Python expressions over the tunables, problem sizes and device limits
     * @param problem names of the problem sizes
     * @param dtype Python dtype name of the data
     * @param output index of the buffer argument the kernel writes
     * @param space the Java callbacks: grid, inputs, scalars, reference
     */
    void declare(String name, String source, String entry, Map<String, long[]> tunables, Map<String, Long> defaults,
                 String[] restrictions, String[] problem, String dtype, int output, KernelSpace space);

    /**
     * Starts {@code count} runtime threads (known to the runtime, so calls from them are cheap),
     * each running {@code body} once; used by {@link io.isthmus.Isthmus#executor(int)}.
     *
     * @param body what each thread runs
     * @param namePrefix the threads' name prefix
     * @param count how many threads
     */
    void startThreads(Runnable body, String namePrefix, int count);

    /** @return the number of open device buffers in the runtime (both languages) */
    long liveBuffers();

    /** @return the version of the runtime (the isthmus Python package), e.g. {@code "0.1.0"} */
    String version();

    /**
     * Wraps a direct, native-order ByteBuffer as a 1-d host array view without copying and
     * returns its address; used by tests and benchmarks to prove zero-copy paths.
     *
     * @param buffer a direct, native-order ByteBuffer
     * @return the address NumPy sees for its position
     */
    long hostAddress(ByteBuffer buffer);

    /**
     * Loads the tensors of a safetensors checkpoint into new buffers on {@code device} (Python's
     * {@code Device.load_safetensors}) in one crossing; used by {@link io.isthmus.SafeTensors#load}.
     *
     * @param path a {@code .safetensors} file, a model folder, or an index {@code .json}
     * @param device the device
     * @return each tensor's name to its new buffer's handle, shape and dtype, in the files' order
     */
    Map<String, OpResult> loadSafetensors(String path, DeviceHandle device);

    /**
     * Loads a Llama-family model from a Hugging Face model folder onto {@code device} (Python's
     * {@code isthmus.llm.LlamaModel.load}) in one crossing; used by {@link io.isthmus.llm.LlamaModel#load}.
     *
     * @param folder the model folder ({@code config.json} and safetensors)
     * @param device the device
     * @param options {@code LlamaModel.load}'s keyword arguments under their Python names ({@code dtype,
     *     max_batch, max_context, kv_cache, page_size}); absent keys take Python's defaults
     * @return the model
     */
    LlamaHandle loadLlama(String folder, DeviceHandle device, Map<String, Object> options);

    /**
     * Loads a model folder's tokenizer (Python's {@code isthmus.llm.Tokenizer.from_folder}); used by
     * {@link io.isthmus.llm.Tokenizer#load}.
     *
     * @param folder the model folder ({@code tokenizer.json}, {@code tokenizer_config.json})
     * @return the tokenizer
     */
    TokenizerHandle loadTokenizer(String folder);
}
