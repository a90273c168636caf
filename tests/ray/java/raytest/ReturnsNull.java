package raytest;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.ShardTask;

/** Breaks the contract: no results. */
public final class ReturnsNull implements ShardTask {
    @Override
    public DeviceBuffer[] run(Device device, DeviceBuffer[] inputs) {
        return null;
    }
}
