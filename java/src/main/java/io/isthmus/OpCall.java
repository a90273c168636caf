package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.OpHandle;
import io.isthmus.spi.OpResult;

import java.util.Map;

/** The Java half of one op crossing: arguments to handles, the {@link OpResult} to a buffer. */
final class OpCall {
    private OpCall() {
    }

    /**
     * Runs the op registered as {@code name} on the device its buffers live on.
     *
     * @param name the op
     * @param out the buffer to write into, or {@code null}
     * @param options the op's keyword arguments, or {@code null}
     * @param args the op's positional arguments: {@link DeviceBuffer}s and Java numbers
     * @return the result (a caller's own buffer when the op returned it), or {@code null}
     */
    static DeviceBuffer run(String name, DeviceBuffer out, Map<String, Object> options, Object... args) {
        return call(Isthmus.get().op(name), out, options, args);
    }

    /**
     * Runs {@code op} in one crossing.
     *
     * @param op the op
     * @param out the buffer to write into, or {@code null}
     * @param options the op's keyword arguments, or {@code null}
     * @param args the op's positional arguments: {@link DeviceBuffer}s and Java numbers
     * @return the result (a caller's own buffer when the op returned it), or {@code null}
     */
    static DeviceBuffer call(OpHandle op, DeviceBuffer out, Map<String, Object> options, Object[] args) {
        BufferHandle outHandle = out == null ? null : out.handle();
        return result(cross(op, outHandle, options, args), args, out);
    }

    /**
     * A few arguments cross as parameters of their own ({@link OpHandle#call1} and the like):
     * the bridge converts those with the call, while each element of an array costs it one more
     * conversion (+30-60% host time on axpy;
     * benchmarks/results/runs/2026-12-03-java-host-time-pocl/issue12-java-host-pocl.md).
     */
    private static OpResult cross(OpHandle op, BufferHandle out, Map<String, Object> options, Object[] args) {
        if (options == null) {
            int n = args.length;
            if (out == null && n == 1) {
                return op.call1(Kernel.handle(args[0], 0));
            }
            if (out == null && n == 2) {
                return op.call2(Kernel.handle(args[0], 0), Kernel.handle(args[1], 1));
            }
            if (out == null && n == 3) {
                return op.call3(Kernel.handle(args[0], 0), Kernel.handle(args[1], 1), Kernel.handle(args[2], 2));
            }
            if (out != null && n == 1) {
                return op.call1Into(Kernel.handle(args[0], 0), out);
            }
            if (out != null && n == 2) {
                return op.call2Into(Kernel.handle(args[0], 0), Kernel.handle(args[1], 1), out);
            }
        }
        return op.call(Kernel.handles(args), out, options);
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
