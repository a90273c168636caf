package io.isthmus;

import io.isthmus.spi.DeviceHandle;
import io.isthmus.spi.Runtime;

/**
 * The runtime's service-provider side for isthmus' own packages built on this one
 * ({@link io.isthmus.llm}): not API for applications, which use {@link Isthmus} and the typed
 * classes; it changes with the runtime.
 */
public final class RuntimeAccess {
    private RuntimeAccess() {
    }

    /**
     * @return the attached runtime's SPI (booting it like {@link Isthmus#get()} does)
     * @throws NotAttachedException if no runtime is attached and none can boot here
     */
    public static Runtime runtime() {
        return Isthmus.get().runtime();
    }

    /**
     * @param device a device of the attached runtime
     * @return its SPI handle
     */
    public static DeviceHandle handle(Device device) {
        if (device == null) {
            throw new InvalidArgumentException("device must not be null; use Isthmus.get().device() for the default");
        }
        return device.handle();
    }
}
