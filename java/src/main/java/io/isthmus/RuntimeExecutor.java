package io.isthmus;

import io.isthmus.spi.Runtime;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A fixed pool whose worker loops run on threads that the runtime started (Python threads),
 * so calls from tasks into the runtime are cheap. Workers poll the queue with a timeout so a
 * shutdown is noticed even when no task arrives.
 */
final class RuntimeExecutor extends AbstractExecutorService {
    private static final Set<RuntimeExecutor> LIVE = ConcurrentHashMap.newKeySet();
    private static final Runnable POISON = () -> { };

    private final LinkedBlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();
    private final CountDownLatch finished;
    private final int threads;
    private volatile boolean shutdown;

    private RuntimeExecutor(int threads) {
        this.threads = threads;
        this.finished = new CountDownLatch(threads);
    }

    static RuntimeExecutor start(Runtime runtime, int threads) {
        RuntimeExecutor ex = new RuntimeExecutor(threads);
        LIVE.add(ex);
        runtime.startThreads(ex::workerLoop, "isthmus-java", threads);
        return ex;
    }

    static boolean shutdownAll(long timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        boolean ok = true;
        for (RuntimeExecutor ex : List.copyOf(LIVE)) {
            ex.shutdown();
            try {
                ok &= ex.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return ok;
    }

    private void workerLoop() {
        try {
            while (true) {
                Runnable task = queue.take();
                if (task == POISON) {
                    return;
                }
                try {
                    task.run();
                } catch (Throwable t) {
                    // execute(): like ThreadPoolExecutor, report and keep the worker alive
                    t.printStackTrace();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            finished.countDown();
            if (finished.getCount() == 0) {
                LIVE.remove(this);
            }
        }
    }

    @Override
    public void execute(Runnable command) {
        if (command == null) {
            throw new NullPointerException("command");
        }
        if (shutdown) {
            throw new RejectedExecutionException("isthmus executor is shut down");
        }
        queue.add(command);
    }

    @Override
    public synchronized void shutdown() {
        if (!shutdown) {
            shutdown = true;
            // tasks already queued still run: the poison pills queue behind them
            poison();
        }
    }

    private void poison() {
        for (int i = 0; i < threads; i++) {
            queue.add(POISON);
        }
    }

    @Override
    public synchronized List<Runnable> shutdownNow() {
        List<Runnable> pending = new ArrayList<>();
        queue.drainTo(pending);
        pending.removeIf(r -> r == POISON);
        shutdown = true;
        poison();
        return pending;
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown && finished.getCount() == 0;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return finished.await(timeout, unit);
    }
}
