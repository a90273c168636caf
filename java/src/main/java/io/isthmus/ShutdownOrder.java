package io.isthmus;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Runs the shutdown hooks registered while the runtime attached (the bridge's own hook, which
 * closes the way from Java into Python) after every hook the application registers.
 *
 * <p>Why: a JVM shutdown (SIGTERM, Ctrl-C, {@code System.exit}) runs all application hooks at
 * once, in no order, while the application's threads keep running. The bridge's hook closes the
 * bridge for good; an application hook or thread still calling into the runtime then crashed the
 * process (SIGSEGV in the bridge, exit 134). Moved to a JVM shutdown slot that runs after the
 * application hooks have all finished, it lets those hooks use the runtime, and the runtime's
 * own step inside it (see {@code isthmus.java.jvm}) stops the remaining threads' calls before the
 * bridge closes. Java orders nothing among hooks, so running some after the others is one of the
 * orders a JVM may choose.
 *
 * <p>The bridge's hook ends with its own step: it refuses every later call from Java into Python
 * (JPype's "Proxy called during shutdown" RuntimeException, thrown into the application's threads)
 * and marks the bridge stopped, after which a call that had already entered it, waiting for the
 * interpreter, fails inside the bridge: SIGSEGV (jp_javaframe.cpp, "Fatal error in exception
 * handling"). Application threads keep running until the JVM halts, and one that the OS did not
 * schedule during the runtime's step makes its next call after that step, so that end must never
 * come: the runtime's step calls {@link #stepDone()} and stays inside the bridge's hook, and the
 * moved hooks' runner stops waiting then, so the JVM halts (with its status) right away; a late
 * call parks in the runtime's gate until the halt.
 *
 * <p>The JDK offers no API for this: it takes {@code --add-opens java.base/java.lang=ALL-UNNAMED},
 * which the runtime passes to the JVM it starts. Without it nothing moves and {@link #defer()}
 * says so.
 */
final class ShutdownOrder {
    /** The JDK's own slots: 0 console, 1 application hooks, 2 delete-on-exit; 10 slots in all. */
    private static final int FIRST_FREE_SLOT = 3;
    private static final int SLOTS = 10;

    /** Hooks {@link #defer()} leaves in place: the application's, when the runtime booted inside its JVM. */
    private static volatile Set<Thread> keep = Set.of();

    /** Released by the runtime's step inside the bridge's hook ({@link #stepDone()}). */
    private static final CountDownLatch STEP_DONE = new CountDownLatch(1);

    private ShutdownOrder() {
    }

    /** The runtime's step of the shutdown has ended: {@link #runAll} waits for no hook any longer. */
    static void stepDone() {
        STEP_DONE.countDown();
    }

    /** @return the application hooks registered so far, empty when the JDK does not let this code see them */
    static Set<Thread> applicationHooks() {
        try {
            Class<?> hooksClass = Class.forName("java.lang.ApplicationShutdownHooks");
            Field field = hooksClass.getDeclaredField("hooks");
            field.setAccessible(true);
            synchronized (hooksClass) {
                Map<?, ?> hooks = (Map<?, ?>) field.get(null);
                Set<Thread> out = new HashSet<>();
                if (hooks != null) {
                    for (Object t : hooks.keySet()) {
                        out.add((Thread) t);
                    }
                }
                return out;
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            return Set.of();
        }
    }

    /** @param hooks hooks that {@link #defer()} must leave where they are (the application's own) */
    static void keepInPlace(Set<Thread> hooks) {
        keep = Set.copyOf(hooks);
    }

    /**
     * Moves the application hooks registered so far to a shutdown slot after the application hooks.
     *
     * @return whether they moved (false when the JDK does not let this code reach its hook table)
     */
    static boolean defer() {
        List<Thread> early;
        Method add;
        try {
            Class<?> hooksClass = Class.forName("java.lang.ApplicationShutdownHooks");
            Field field = hooksClass.getDeclaredField("hooks");
            field.setAccessible(true);
            synchronized (hooksClass) {
                Map<?, ?> hooks = (Map<?, ?>) field.get(null);
                if (hooks == null) {
                    return false;  // the JVM is already shutting down
                }
                early = new ArrayList<>();
                for (Object t : hooks.keySet()) {
                    if (!keep.contains(t)) {
                        early.add((Thread) t);
                    }
                }
            }
            add = Class.forName("java.lang.Shutdown").getDeclaredMethod("add", int.class, boolean.class,
                    Runnable.class);
            add.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return false;  // InaccessibleObjectException without the --add-opens, or another JDK's layout
        }
        if (early.isEmpty()) {
            return true;
        }
        Runnable later = () -> runAll(early);
        for (int slot = SLOTS - 1; slot >= FIRST_FREE_SLOT; slot--) {
            try {
                add.invoke(null, slot, false, later);
            } catch (InvocationTargetException e) {
                continue;  // a slot taken (IllegalArgumentException)
            } catch (IllegalAccessException e) {
                return false;
            }
            for (Thread t : early) {
                Runtime.getRuntime().removeShutdownHook(t);
            }
            return true;
        }
        return false;
    }

    /**
     * What the JVM does with application hooks: start them all, then wait for each; but once the
     * runtime's step has ended ({@link #stepDone()}), the JVM halts next: the bridge's hook, which
     * holds that step, never ends, and any other hook moved here is cut short by the halt.
     */
    private static void runAll(List<Thread> hooks) {
        for (Thread t : hooks) {
            t.start();
        }
        for (Thread t : hooks) {
            while (t.isAlive()) {
                try {
                    if (STEP_DONE.await(10, TimeUnit.MILLISECONDS)) {
                        return;
                    }
                } catch (InterruptedException ignored) {
                    // the JVM's own loop ignores interrupts here too
                }
            }
        }
    }
}
