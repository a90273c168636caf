package example;

import io.isthmus.DType;
import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;
import io.isthmus.Transpose;

import java.util.Arrays;
import java.util.Random;

/**
 * Scores a batch of query embeddings against a catalog of item embeddings on the device
 * (gemm: queries x catalog^T, then a row softmax) and prints each query's top items.
 */
public final class Scoring {
    /** Top-k item indices of one row of probabilities, best first. */
    static int[] topK(float[] probs, int row, int items, int k) {
        Integer[] idx = new Integer[items];
        for (int i = 0; i < items; i++) {
            idx[i] = i;
        }
        Arrays.sort(idx, (a, b) -> Float.compare(probs[row * items + b], probs[row * items + a]));
        return Arrays.stream(idx).limit(k).mapToInt(Integer::intValue).toArray();
    }

    /**
     * Probabilities (queries x items) of each item for each query.
     *
     * @param dev the device
     * @param queries row-major, {@code nQueries x dim}
     * @param catalog row-major, {@code nItems x dim}
     */
    static float[] score(Device dev, float[] queries, float[] catalog, int nQueries, int nItems, int dim) {
        try (DeviceBuffer q = dev.fromArray(queries, nQueries, dim);
             DeviceBuffer items = dev.fromArray(catalog, nItems, dim);
             // scaled dot products q @ items.T: the catalog is read transposed, no transpose kernel
             DeviceBuffer logits = Ops.gemm(q, items, null, 1.0 / Math.sqrt(dim), 0.0, Transpose.B);
             DeviceBuffer probs = Ops.softmax(logits)) {
            return probs.toFloatArray();
        }
    }

    static float[] random(Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    public static void main(String[] args) {
        int nQueries = 4;
        int nItems = 1000;
        int dim = 64;
        int k = 3;
        Device dev = args.length > 0 ? Isthmus.get().device(args[0]) : Isthmus.get().device();
        Random r = new Random(42);
        float[] catalog = random(r, nItems * dim);
        float[] queries = new float[nQueries * dim];
        // each query is a noisy copy of one catalog item, so the right answer is known
        int[] planted = {17, 256, 511, 999};
        for (int q = 0; q < nQueries; q++) {
            for (int d = 0; d < dim; d++) {
                queries[q * dim + d] = catalog[planted[q] * dim + d] + 0.1f * (float) r.nextGaussian();
            }
        }
        long t0 = System.nanoTime();
        float[] probs = score(dev, queries, catalog, nQueries, nItems, dim);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("scored %d queries against %d items (dim %d) on %s [%s] in %d ms%n",
                nQueries, nItems, dim, dev.id(), dev.name(), ms);
        for (int q = 0; q < nQueries; q++) {
            int[] top = topK(probs, q, nItems, k);
            StringBuilder line = new StringBuilder("query " + q + " (planted item " + planted[q] + "):");
            for (int i : top) {
                line.append(String.format(" item %d p=%.3f", i, probs[q * nItems + i]));
            }
            System.out.println(line);
        }
        System.out.println("live device buffers after the job: " + Isthmus.get().liveBuffers());
    }
}
