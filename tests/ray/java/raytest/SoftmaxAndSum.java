package raytest;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Ops;
import io.isthmus.ShardTask;

/** Two inputs, two outputs: the row softmax of the first, the sum of the second. Counts its shards. */
public final class SoftmaxAndSum implements ShardTask {
    private int shards;

    @Override
    public DeviceBuffer[] run(Device device, DeviceBuffer[] inputs) {
        if (!inputs[0].device().equals(device)) {
            throw new IllegalStateException("input on " + inputs[0].device() + ", task given " + device);
        }
        shards++;
        return new DeviceBuffer[] {Ops.softmax(inputs[0]), Ops.sum(inputs[1])};
    }
}
