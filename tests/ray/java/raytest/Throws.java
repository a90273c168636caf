package raytest;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.ShardTask;

/** Always fails, with a message the caller must see. */
public final class Throws implements ShardTask {
    @Override
    public DeviceBuffer[] run(Device device, DeviceBuffer[] inputs) {
        throw new IllegalStateException("shard refused by raytest.Throws");
    }
}
