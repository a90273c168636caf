package io.isthmus;

import io.isthmus.spi.KernelHandle;
import io.isthmus.spi.PlanHandle;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The memo behind {@link Kernel#launch(LaunchConfig, Object...)}: a launch repeated with the same
 * grid and the same buffers is replayed from a prepared launch, so it crosses the language bridge
 * with no arguments at all instead of converting each one again. Numbers that changed since the
 * last launch of that plan are rebound first, one bridge call each. The first sighting of a
 * (grid, buffers) pair runs eagerly; the second prepares it.
 *
 * <p>Keys compare buffers by identity and numbers by their boxed type; values are compared with
 * {@code equals}. The plans are unpinned (closing a buffer frees its memory at once; a launch of
 * a plan whose buffer Python closed throws {@link ClosedBufferException}). At most
 * {@value #CAPACITY} (grid, buffers) pairs per kernel are remembered, least recently used first
 * out; a dropped plan is released by the garbage collector, never closed here, so a thread still
 * launching it is not disturbed. A plan is rebound and launched under its own lock.
 */
final class LaunchMemo {
    static final int CAPACITY = 32;
    /** A (grid, buffers) pair seen once: the next sighting prepares it. */
    private static final Object SEEN = new Object();

    private final Map<Key, Object> entries = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, Object> eldest) {
            return size() > CAPACITY;
        }
    };

    /** Launches {@code handles} (already converted by {@link Kernel#handles}) on {@code config}. */
    void launch(KernelHandle kernel, LaunchConfig config, Object[] handles) {
        Key key = new Key(config, handles);
        Object entry;
        synchronized (this) {
            entry = entries.get(key);
        }
        if (entry instanceof Prepared p) {
            p.launch(handles);
            return;
        }
        if (entry == null) {
            kernel.launch(config.global(), config.local(), handles);
            synchronized (this) {
                entries.putIfAbsent(key, SEEN);
            }
            return;
        }
        Prepared p = new Prepared(kernel.memo(config.global(), config.local(), handles), handles.clone());
        synchronized (this) {
            entries.put(key, p);
        }
        p.handle.launch();
    }

    synchronized int size() {
        return entries.size();
    }

    /** A plan and the numbers it is bound to now. */
    private static final class Prepared {
        final PlanHandle handle;
        private final Object[] bound;

        Prepared(PlanHandle handle, Object[] bound) {
            this.handle = handle;
            this.bound = bound;
        }

        synchronized void launch(Object[] args) {
            for (int i = 0; i < args.length; i++) {
                Object a = args[i];
                if (a instanceof Number && !a.equals(bound[i])) {
                    handle.bindIndex(i, a);
                    bound[i] = a;
                }
            }
            handle.launch();
        }
    }

    /** Grid, buffers by identity (their own equals would call into Python), numbers by type. */
    private static final class Key {
        private final LaunchConfig config;
        private final Object[] args;
        private final int hash;

        Key(LaunchConfig config, Object[] args) {
            this.config = config;
            this.args = args;
            int h = config.hashCode();
            for (Object a : args) {
                h = h * 31 + (a instanceof Number ? a.getClass().hashCode() : System.identityHashCode(a));
            }
            this.hash = h;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Key k) || k.hash != hash || k.args.length != args.length || !k.config.equals(config)) {
                return false;
            }
            for (int i = 0; i < args.length; i++) {
                Object a = args[i];
                Object b = k.args[i];
                if (a instanceof Number ? b == null || a.getClass() != b.getClass() : a != b) {
                    return false;
                }
            }
            return true;
        }
    }
}
