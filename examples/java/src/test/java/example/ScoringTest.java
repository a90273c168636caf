package example;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.isthmus.Device;
import io.isthmus.Isthmus;

import java.util.Random;

import org.junit.jupiter.api.Test;

/** Runs on the real runtime: surefire forks this JVM through the bin/java of `isthmus jvm-home`. */
class ScoringTest {
    @Test
    void runsWithTheRuntimeAttached() {
        assertTrue(Isthmus.isAttached(), "surefire should run tests through the bin/java of `isthmus jvm-home`");
        assertTrue(Isthmus.get().devices().size() >= 1);
    }

    @Test
    void plantedItemsWinAndRowsSumToOne() {
        Device dev = Isthmus.get().device();
        Random r = new Random(1);
        int items = 50;
        int dim = 16;
        float[] catalog = Scoring.random(r, items * dim);
        float[] queries = new float[2 * dim];
        System.arraycopy(catalog, 7 * dim, queries, 0, dim);
        System.arraycopy(catalog, 31 * dim, queries, dim, dim);
        long before = Isthmus.get().liveBuffers();
        float[] p = Scoring.score(dev, queries, catalog, 2, items, dim);
        assertEquals(before, Isthmus.get().liveBuffers());
        assertArrayEquals(new int[] {7}, Scoring.topK(p, 0, items, 1));
        assertArrayEquals(new int[] {31}, Scoring.topK(p, 1, items, 1));
        for (int q = 0; q < 2; q++) {
            double sum = 0;
            for (int i = 0; i < items; i++) {
                sum += p[q * items + i];
            }
            assertEquals(1.0, sum, 1e-4);
        }
    }
}
