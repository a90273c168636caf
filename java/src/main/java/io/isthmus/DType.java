package io.isthmus;

/**
 * Element type of a {@link DeviceBuffer}, one to one with the dtypes of the Python runtime.
 *
 * <p>{@link #pythonName()} is the NumPy spelling used across the language boundary;
 * {@link #size()} is the element size in bytes.
 */
public enum DType {
    /** 32-bit IEEE float ({@code float32}). */
    FLOAT32("float32", 4),
    /** 64-bit IEEE float ({@code float64}). */
    FLOAT64("float64", 8),
    /** 16-bit IEEE float ({@code float16}); Java reads it widened to {@code float}. */
    FLOAT16("float16", 2),
    /**
     * bfloat16 ({@code bfloat16}, NumPy's through ml_dtypes): the upper 16 bits of a float32.
     * Host transfers move its 2-byte patterns (a native-order {@code ByteBuffer}, or
     * {@code short[]} through {@link #floatToBfloat16(float)}); Java reads it widened to {@code float}.
     */
    BFLOAT16("bfloat16", 2),
    /** 32-bit signed integer ({@code int32}). */
    INT32("int32", 4),
    /** 64-bit signed integer ({@code int64}). */
    INT64("int64", 8),
    /** 8-bit unsigned integer ({@code uint8}); Java reads it widened to {@code int}. */
    UINT8("uint8", 1),
    /**
     * 64-bit unsigned integer ({@code uint64}): the dtype of a sum of {@code uint8} (NumPy's
     * promotion); Java reads its bits as a {@code long} ({@link Long#toUnsignedString(long)}).
     */
    UINT64("uint64", 8);

    private final String pythonName;
    private final int size;

    DType(String pythonName, int size) {
        this.pythonName = pythonName;
        this.size = size;
    }

    /** @return the NumPy name of this dtype, e.g. {@code "float32"} */
    public String pythonName() {
        return pythonName;
    }

    /** @return the size of one element in bytes */
    public int size() {
        return size;
    }

    /**
     * The dtype with the given NumPy name.
     *
     * @param name a NumPy dtype name such as {@code "float32"}
     * @return the matching dtype
     * @throws UnsupportedDtypeException if isthmus has no such dtype
     */
    public static DType fromPythonName(String name) {
        for (DType d : values()) {
            if (d.pythonName.equals(name)) {
                return d;
            }
        }
        throw new UnsupportedDtypeException("unsupported dtype '" + name + "': expected one of "
                + "float32, float64, float16, bfloat16, int32, int64, uint8, uint64");
    }

    /**
     * The bfloat16 bit pattern nearest to {@code value} (round to nearest, ties to even, as NumPy's
     * ml_dtypes and the kernels round); NaN stays NaN.
     *
     * @param value any float
     * @return its bfloat16 pattern, to put into a {@code ByteBuffer} with {@code putShort}
     */
    public static short floatToBfloat16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    /**
     * The float a bfloat16 bit pattern stands for (exact).
     *
     * @param bits a bfloat16 pattern
     * @return the float value
     */
    public static float bfloat16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }
}
