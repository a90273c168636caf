package io.isthmus;

/**
 * A kernel failed to compile; carries the compiler's build log. Mirrors
 * {@code isthmus.errors.CompileError}.
 */
public class CompileException extends IsthmusException {
    private static final long serialVersionUID = 1L;

    /** The compiler's build log, never {@code null}. */
    private final String log;
    /** The kernel that failed, or {@code null}. */
    private final String kernelName;

    /**
     * An error detected in Java, with no Python type, traceback or build log.
     *
     * @param message what was wrong, what was expected, what to do
     */
    public CompileException(String message) {
        this(message, null, null, "", null);
    }

    /**
     * @param message what was wrong
     * @param pythonType qualified name of the Python exception type, or {@code null}
     * @param pythonTraceback the Python traceback text, or {@code null}
     * @param log the compiler's build log (may be empty, never {@code null})
     * @param kernelName the kernel that failed, or {@code null}
     */
    public CompileException(String message, String pythonType, String pythonTraceback,
                            String log, String kernelName) {
        super(message, pythonType, pythonTraceback);
        this.log = log == null ? "" : log;
        this.kernelName = kernelName;
    }

    /** @return the compiler's build log */
    public String log() {
        return log;
    }

    /** @return the name of the kernel that failed to compile, or {@code null} */
    public String kernelName() {
        return kernelName;
    }
}
