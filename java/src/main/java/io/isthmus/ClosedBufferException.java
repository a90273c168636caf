package io.isthmus;

/**
 * Use of a {@link DeviceBuffer} (or the Python Buffer behind it) after it was closed; mirrors {@code isthmus.errors.ClosedBufferError}.
 */
public class ClosedBufferException extends IsthmusException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public ClosedBufferException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public ClosedBufferException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
