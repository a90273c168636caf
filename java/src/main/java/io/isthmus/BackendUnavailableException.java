package io.isthmus;

/**
 * The requested backend (CUDA or OpenCL) or device is not available here; mirrors {@code isthmus.errors.BackendUnavailableError}.
 */
public class BackendUnavailableException extends IsthmusException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public BackendUnavailableException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public BackendUnavailableException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
