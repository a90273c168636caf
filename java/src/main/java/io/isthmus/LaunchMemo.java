package io.isthmus;

import io.isthmus.spi.KernelHandle;
import io.isthmus.spi.PlanHandle;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The memo behind {@link Kernel#launch(LaunchConfig, Object...)}: an eager launch repeated with
 * the same grid and the same arguments (the same buffers, equal numbers) is replayed from a
 * prepared launch, so it crosses the language bridge with no arguments at all instead of
 * converting each one again. The first sighting of a launch runs eagerly; the second prepares it.
 *
 * <p>Keys compare buffers by identity and numbers with {@code equals} (same boxed type, same
 * value). The plans are unpinned (closing a buffer frees its memory at once; a launch of a plan
 * whose buffer Python closed throws {@link ClosedBufferException}). At most {@value #CAPACITY}
 * launches per kernel are remembered, least recently used first out; a dropped plan is released
 * by the garbage collector, never closed here, so a thread still launching it is not disturbed.
 */
final class LaunchMemo {
    static final int CAPACITY = 32;
    /** A launch seen once: the next sighting prepares it. */
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
        if (entry instanceof PlanHandle plan) {
            plan.launch();
            return;
        }
        if (entry == null) {
            kernel.launch(config.global(), config.local(), handles);
            synchronized (this) {
                entries.putIfAbsent(key, SEEN);
            }
            return;
        }
        PlanHandle plan = kernel.memo(config.global(), config.local(), handles);
        synchronized (this) {
            entries.put(key, plan);
        }
        plan.launch();
    }

    synchronized int size() {
        return entries.size();
    }

    /** Grid and arguments; buffer handles by identity (their own equals would call into Python). */
    private static final class Key {
        private final LaunchConfig config;
        private final Object[] args;
        private final int hash;

        Key(LaunchConfig config, Object[] args) {
            this.config = config;
            this.args = args;
            int h = config.hashCode();
            for (Object a : args) {
                h = h * 31 + (a instanceof Number ? a.getClass().hashCode() ^ a.hashCode() : System.identityHashCode(a));
            }
            this.hash = h;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Key k) || k.hash != hash || k.args.length != args.length
                    || !k.config.equals(config)) {
                return false;
            }
            for (int i = 0; i < args.length; i++) {
                Object a = args[i];
                Object b = k.args[i];
                if (a instanceof Number) {
                    if (b == null || a.getClass() != b.getClass() || !a.equals(b)) {
                        return false;
                    }
                } else if (a != b) {
                    return false;
                }
            }
            return true;
        }
    }
}
