package io.isthmus;

/**
 * The device could not allocate the requested memory; mirrors {@code isthmus.errors.OutOfMemoryError} (renamed to stay apart from {@link java.lang.OutOfMemoryError}).
 */
public class OutOfDeviceMemoryException extends IsthmusException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public OutOfDeviceMemoryException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public OutOfDeviceMemoryException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
