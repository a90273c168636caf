package io.isthmus;

/**
 * A file that is not in the format it should be (a damaged safetensors checkpoint or its index):
 * the message names the file, the part and what was wrong; mirrors {@code isthmus.errors.FormatError}.
 */
public class FormatException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public FormatException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public FormatException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
