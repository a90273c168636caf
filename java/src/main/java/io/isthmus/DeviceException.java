package io.isthmus;

/**
 * The device or its driver failed (launch failure, lost device); mirrors {@code isthmus.errors.DeviceError}.
 */
public class DeviceException extends IsthmusException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public DeviceException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public DeviceException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
