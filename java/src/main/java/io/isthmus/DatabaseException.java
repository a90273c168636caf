package io.isthmus;

/**
 * An invalid tuning database or tuning file; mirrors {@code isthmus.errors.DatabaseError}.
 */
public class DatabaseException extends IsthmusException {
    private static final long serialVersionUID = 1L;

    /**
     * An error detected in Java, with no Python type or traceback.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public DatabaseException(String message) {
        this(message, null, null);
    }

    /**
     * @param message what was wrong, what was expected, what to do
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     */
    public DatabaseException(String message, String pythonType, String pythonTraceback) {
        super(message, pythonType, pythonTraceback);
    }
}
