package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.OpResult;

import java.util.Map;

/** The Java half of one library-op crossing: arguments to handles, the {@link OpResult} to a buffer. */
final class OpCall {
    private OpCall() {
    }

    /**
     * Runs {@code name} through {@link io.isthmus.spi.Runtime#op} on the device its buffers live on.
     *
     * @param name the op
     * @param out the buffer to write into, or {@code null}
     * @param options the op's keyword arguments, or {@code null}
     * @param args the op's positional arguments: {@link DeviceBuffer}s and Java numbers
     * @return the result (a caller's own buffer when the op returned it), or {@code null}
     */
    static DeviceBuffer run(String name, DeviceBuffer out, Map<String, Object> options, Object... args) {
        BufferHandle outHandle = out == null ? null : out.handle();
        OpResult r = Isthmus.get().runtime().op(name, Kernel.handles(args), outHandle, options);
        return result(r, args, out);
    }

    /**
     * @param r what the runtime returned
     * @param args the caller's arguments
     * @param out the caller's {@code out}, or {@code null}
     * @return the result as a buffer
     */
    static DeviceBuffer result(OpResult r, Object[] args, DeviceBuffer out) {
        if (r == null) {
            return null;
        }
        BufferHandle h = r.handle();
        if (r.shape() != null) {
            return DeviceBuffer.wrap(h, r.shape().clone(), DType.fromPythonName(r.dtype()));
        }
        // The op returned a buffer the caller passed in: hand back the caller's own DeviceBuffer.
        // A second wrapper would carry a second Cleaner that, once collected, would release the
        // handle the caller still uses.
        if (out != null && out.handle() == h) {
            return out;
        }
        for (Object a : args) {
            if (a instanceof DeviceBuffer b && b.handle() == h) {
                return b;
            }
        }
        throw new IsthmusException("the runtime returned a buffer handle that is neither new nor one of the "
                + "arguments (an isthmus bug: please report it)");
    }
}
