package io.isthmus;

/**
 * One step of a sharded job run by isthmus device actors on a Ray cluster ({@code isthmus.ray}):
 * the device and one shard's inputs, already on the device, in; the shard's results, on the
 * device, out.
 *
 * <p>The actor loads the class by name from its classpath ({@code DevicePool(classpath=...)}),
 * makes one instance with the public no-argument constructor and keeps it for the actor's life,
 * so state such as a compiled kernel is reused across shards. {@code run} is called from one thread
 * at a time. The inputs belong to the caller: they are valid during the call only (their memory
 * receives the next shard), so do not close or keep them. The outputs belong to the caller once
 * returned: the actor copies them to the host and closes them. Returning an input is allowed.
 *
 * <pre>{@code
 * public final class RowSoftmax implements ShardTask {
 *     public DeviceBuffer[] run(Device device, DeviceBuffer[] inputs) {
 *         return new DeviceBuffer[] {Ops.softmax(inputs[0])};   // a new buffer on the device
 *     }
 * }
 * }</pre>
 */
public interface ShardTask {
    /**
     * Computes one shard.
     *
     * @param device the device the actor owns
     * @param inputs the shard's arrays, in the order the shard lists them, on {@code device}
     * @return the shard's results, on {@code device} (at least one)
     */
    DeviceBuffer[] run(Device device, DeviceBuffer[] inputs);
}
