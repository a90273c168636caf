package io.isthmus;

import io.isthmus.spi.OpResult;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tensors of a safetensors checkpoint, loaded into device memory: named {@link DeviceBuffer}s
 * with the dtype and shape the file's header gives, the same allocations that Python's
 * {@code Device.load_safetensors} makes. {@link #close()} frees them all.
 *
 * <p>{@link #load(Path, Device)} takes a {@code .safetensors} file, a Hugging Face model folder
 * (its {@code model.safetensors.index.json} and the shards it names, else its
 * {@code model.safetensors}) or an index {@code .json}. The runtime reads the files through a
 * memory map and pinned staging buffers straight into device memory, overlapping reading with
 * the copies: nothing of the data passes through the Java heap. Every header is checked before
 * anything is allocated; a damaged file throws {@link FormatException}, a dtype isthmus cannot
 * hold (F8, I8, BOOL, ...) {@link UnsupportedDtypeException}, and after any error nothing stays
 * allocated. Loadable dtypes: F32, F64 (where the device has it), F16, BF16, I32, I64, U8.
 *
 * <pre>{@code
 * try (SafeTensors weights = SafeTensors.load(Path.of("Llama-3.2-1B"), dev)) {
 *     DeviceBuffer embed = weights.get("model.embed_tokens.weight");
 *     long[] shape = embed.shape();                 // {128256, 2048}
 * }
 * }</pre>
 */
public final class SafeTensors implements AutoCloseable {
    private final String source;
    private Map<String, DeviceBuffer> tensors;

    private SafeTensors(String source, Map<String, DeviceBuffer> tensors) {
        this.source = source;
        this.tensors = tensors;
    }

    /**
     * Loads a checkpoint's tensors onto {@code device} (one call into the runtime).
     *
     * @param path a {@code .safetensors} file, a model folder, or a {@code model.safetensors.index.json}
     * @param device where the tensors go
     * @return the tensors, in the files' order
     * @throws FormatException if a file or the index is damaged (truncated, header not JSON, offsets out
     *     of range or overlapping, a tensor in two shards, ...)
     * @throws UnsupportedDtypeException if a tensor's dtype is not one isthmus (or the device) holds
     * @throws InvalidArgumentException if {@code path} names no checkpoint
     * @throws OutOfDeviceMemoryException if the device cannot hold the tensors
     */
    public static SafeTensors load(Path path, Device device) {
        if (path == null || device == null) {
            throw new InvalidArgumentException("SafeTensors.load needs a path and a device, got "
                    + (path == null ? "no path" : "no device"));
        }
        Map<String, OpResult> loaded = Isthmus.get().runtime().loadSafetensors(path.toString(), device.handle());
        Map<String, DeviceBuffer> tensors = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, OpResult> e : loaded.entrySet()) {
                OpResult r = e.getValue();
                DType dtype = DType.fromPythonName(r.dtype());
                tensors.put(e.getKey(), DeviceBuffer.wrap(r.handle(), r.shape().clone(), dtype));
            }
        } catch (RuntimeException e) {
            tensors.values().forEach(DeviceBuffer::close);
            loaded.values().forEach(r -> r.handle().close());
            throw e;
        }
        return new SafeTensors(path.toString(), tensors);
    }

    private synchronized Map<String, DeviceBuffer> open() {
        if (tensors == null) {
            throw new ClosedBufferException("the tensors loaded from " + source + " were closed; load them again");
        }
        return tensors;
    }

    /**
     * @param name a tensor's name, e.g. {@code "model.norm.weight"}
     * @return its buffer (owned by this object: closing it here frees it for everyone)
     * @throws InvalidArgumentException if the checkpoint has no such tensor
     * @throws ClosedBufferException after {@link #close()}
     */
    public DeviceBuffer get(String name) {
        Map<String, DeviceBuffer> found = open();
        DeviceBuffer b = found.get(name);
        if (b == null) {
            throw new InvalidArgumentException("no tensor '" + name + "' in " + source + " (" + found.size()
                    + " tensors; see names())");
        }
        return b;
    }

    /**
     * @param name a tensor's name
     * @return whether the checkpoint has it
     */
    public boolean contains(String name) {
        return open().containsKey(name);
    }

    /** @return the tensors' names, in the files' order */
    public List<String> names() {
        return Collections.unmodifiableList(new ArrayList<>(open().keySet()));
    }

    /** @return how many tensors there are */
    public int size() {
        return open().size();
    }

    /** @return the path this was loaded from, as given */
    public String source() {
        return source;
    }

    /** Frees every tensor's buffer; idempotent. */
    @Override
    public void close() {
        Map<String, DeviceBuffer> found;
        synchronized (this) {
            found = tensors;
            tensors = null;
        }
        if (found != null) {
            found.values().forEach(DeviceBuffer::close);
        }
    }

    @Override
    public String toString() {
        Map<String, DeviceBuffer> found;
        synchronized (this) {
            found = tensors;
        }
        return "SafeTensors(" + source + ", " + (found == null ? "closed" : found.size() + " tensors") + ")";
    }
}
