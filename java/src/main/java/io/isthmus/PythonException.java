package io.isthmus;

/**
 * The Python exception behind an {@link IsthmusException} raised by the runtime: its
 * {@link #getCause()}. The message is the Python type and message, the stack trace the Python
 * frames (module as class, function as method, file and line), so a Java stack trace shows where
 * in Python the error arose; the Python exception's own cause follows as this one's cause.
 */
public final class PythonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message the Python type and message, e.g. {@code "ValueError: bad shape"}
     * @param frames the Python frames, outermost first as Python prints them
     * @param cause the Python exception's own cause, or {@code null}
     */
    public PythonException(String message, StackTraceElement[] frames, Throwable cause) {
        super(message, cause, false, true);
        StackTraceElement[] innermostFirst = new StackTraceElement[frames == null ? 0 : frames.length];
        for (int i = 0; i < innermostFirst.length; i++) {
            innermostFirst[i] = frames[frames.length - 1 - i];
        }
        setStackTrace(innermostFirst);
    }
}
