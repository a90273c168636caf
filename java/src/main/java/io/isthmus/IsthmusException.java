package io.isthmus;

/**
 * Base of every error the isthmus runtime reports to Java; unchecked, mirroring
 * {@code isthmus.errors.IsthmusError}.
 *
 * <p>An error raised by the Python runtime arrives as the matching subclass with the Python
 * message as {@link #getMessage()}, the Python exception type as {@link #pythonType()} and the
 * formatted Python traceback as {@link #pythonTraceback()}. Errors detected on the Java side
 * (for example a closed handle) have no Python type and no traceback.
 */
public class IsthmusException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Qualified name of the Python exception type, or {@code null}. */
    private final String pythonType;
    /** The Python traceback text, or {@code null}. */
    private final String pythonTraceback;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public IsthmusException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public IsthmusException(String message, String pythonType, String pythonTraceback) {
        super(message);
        this.pythonType = pythonType;
        this.pythonTraceback = pythonTraceback;
    }

    /** @return qualified name of the Python exception type (e.g. {@code isthmus.errors.CompileError}), or {@code null} */
    public String pythonType() {
        return pythonType;
    }

    /** @return the Python traceback text, or {@code null} when the error was detected in Java */
    public String pythonTraceback() {
        return pythonTraceback;
    }

    @Override
    public String toString() {
        String s = super.toString();
        return pythonType == null ? s : s + " [python: " + pythonType + "]";
    }
}
