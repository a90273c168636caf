package example;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.DType;
import io.isthmus.Kernel;
import io.isthmus.LaunchConfig;
import io.isthmus.Ops;
import io.isthmus.ShardTask;

/**
 * The scoring job of examples/java as one step of a sharded job: a shard of query embeddings
 * ({@code n x dim}) scored against the item catalog ({@code items x dim}): scaled dot products
 * (gemm), a row softmax, then each query's best item and its probability, on the device.
 *
 * <p>Inputs: queries, catalog (float32). Outputs: best item per query (int32, {@code n}), its
 * probability (float32, {@code n}). The argmax kernel is compiled once per actor (this instance
 * lives as long as the actor).
 */
public final class ScoringShard implements ShardTask {
    static final String ARGMAX = String.join("\n",
            "__kernel void row_argmax(__global const float* p, int rows, int cols,",
            "                         __global int* best, __global float* bestp) {",
            "    int r = get_global_id(0);",
            "    if (r >= rows) return;",
            "    const __global float* row = p + (long)r * cols;",
            "    int bi = 0; float bv = row[0];",
            "    for (int c = 1; c < cols; c++) { float v = row[c]; if (v > bv) { bv = v; bi = c; } }",
            "    best[r] = bi; bestp[r] = bv;",
            "}");

    private Kernel argmax;

    @Override
    public DeviceBuffer[] run(Device device, DeviceBuffer[] inputs) {
        DeviceBuffer queries = inputs[0];
        DeviceBuffer catalog = inputs[1];
        int n = (int) queries.shape()[0];
        int dim = (int) queries.shape()[1];
        int items = (int) catalog.shape()[0];
        if (argmax == null) {
            argmax = device.compile(ARGMAX, "row_argmax", null);
        }
        DeviceBuffer best = device.allocate(DType.INT32, n);
        DeviceBuffer bestP = device.allocate(DType.FLOAT32, n);
        try (DeviceBuffer itemsT = Ops.transpose(catalog);
             DeviceBuffer logits = Ops.gemm(queries, itemsT, null, 1.0 / Math.sqrt(dim), 0.0);
             DeviceBuffer probs = Ops.softmax(logits)) {
            argmax.launch(LaunchConfig.of(n), probs, n, items, best, bestP);
        }
        return new DeviceBuffer[] {best, bestP};
    }
}
