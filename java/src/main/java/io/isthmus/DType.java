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
    /** 32-bit signed integer ({@code int32}). */
    INT32("int32", 4),
    /** 64-bit signed integer ({@code int64}). */
    INT64("int64", 8),
    /** 8-bit unsigned integer ({@code uint8}); Java reads it widened to {@code int}. */
    UINT8("uint8", 1);

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
                + "float32, float64, float16, int32, int64, uint8", null, null);
    }
}
