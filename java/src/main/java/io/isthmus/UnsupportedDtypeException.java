package io.isthmus;

/**
 * A dtype that the operation or the device does not support; mirrors {@code isthmus.errors.UnsupportedDtypeError}.
 */
public class UnsupportedDtypeException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public UnsupportedDtypeException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public UnsupportedDtypeException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
