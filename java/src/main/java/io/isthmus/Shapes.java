package io.isthmus;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/** Argument checks shared by the public types, done in Java so bad input fails before any runtime call. */
final class Shapes {
    private Shapes() {
    }

    static long[] checked(long[] shape) {
        if (shape == null) {
            throw new InvalidArgumentException("shape must not be null");
        }
        for (long d : shape) {
            if (d < 0) {
                throw new InvalidArgumentException("shape dimensions must be >= 0, got "
                        + Arrays.toString(shape));
            }
        }
        return shape.clone();
    }

    static long count(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    /** Shape for an array of {@code length} elements: {@code shape} if given (and matching), else 1-d. */
    static long[] forArray(int length, long[] shape) {
        if (shape == null || shape.length == 0) {
            return new long[] {length};
        }
        long[] s = checked(shape);
        if (count(s) != length) {
            throw new InvalidArgumentException("shape " + Arrays.toString(s) + " holds " + count(s)
                    + " elements but the array has " + length);
        }
        return s;
    }

    static void checkDirect(ByteBuffer buffer, String what) {
        if (buffer == null) {
            throw new InvalidArgumentException(what + " must not be null");
        }
        if (!buffer.isDirect()) {
            throw new InvalidArgumentException(what + " is a heap ByteBuffer; isthmus needs a direct one: "
                    + "ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder()) or Device.allocateHost(...)");
        }
        if (buffer.order() != ByteOrder.nativeOrder()) {
            throw new InvalidArgumentException(what + " is " + buffer.order() + " but the device reads "
                    + ByteOrder.nativeOrder() + ": call buffer.order(ByteOrder.nativeOrder()) before "
                    + "writing to it");
        }
    }
}
