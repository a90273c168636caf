package io.isthmus;

import io.isthmus.spi.BufferHandle;
import io.isthmus.spi.OpHandle;
import io.isthmus.spi.OpResult;

/** A/B: an op through OpHandle.call4 (slots) and through the former per-arity shapes, same process. */
public final class SlotsAB {
    private SlotsAB() {
    }

    /** The former per-arity methods, implemented in Python as they were. */
    public interface PerArity {
        OpResult call1(OpHandle op, Object a);
        OpResult call3(OpHandle op, Object a, Object b, Object c);
        OpResult call1Into(OpHandle op, Object a, BufferHandle out);
    }

    public static double cpuNs(PerArity old, String what, boolean slots, DeviceBuffer x, DeviceBuffer out, int iters) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        OpHandle op = Isthmus.get().op(what.equals("softmax out=") ? "softmax" : what);
        for (int i = 0; i < iters / 10 + 10; i++) {
            once(old, op, what, slots, x, out);
        }
        x.device().synchronize();
        long c0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < iters; i++) {
            once(old, op, what, slots, x, out);
        }
        x.device().synchronize();
        return (mx.getCurrentThreadCpuTime() - c0) / (double) iters;
    }

    private static void once(PerArity old, OpHandle op, String what, boolean slots, DeviceBuffer x, DeviceBuffer out) {
        BufferHandle h = x.handle();
        switch (what) {
            case "axpy" -> OpCall.result(slots ? op.call4(0.5, h, h, null, null) : old.call3(op, 0.5, h, h),
                                         new Object[] {0.5, x, x}, null);
            case "softmax out=" -> OpCall.result(slots ? op.call4(h, null, null, null, out.handle())
                                                       : old.call1Into(op, h, out.handle()), new Object[] {x}, out);
            default -> OpCall.result(slots ? op.call4(h, null, null, null, null) : old.call1(op, h),
                                     new Object[] {x}, null).close();
        }
    }
}
