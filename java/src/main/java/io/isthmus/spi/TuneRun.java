package io.isthmus.spi;

import java.util.Map;

/** One finished tuning run as the runtime reports it; {@link io.isthmus.Tuner} turns it into a record. */
public interface TuneRun {
    /** @return the kernel tuned */
    String kernel();

    /** @return the device id */
    String device();

    /** @return the fastest correct config (tunable name to value) */
    Map<String, Long> best();

    /** @return the best config's median time in milliseconds (infinite if none ran correctly) */
    double bestMs();

    /** @return the kernel's default config on this device */
    Map<String, Long> defaults();

    /** @return the default config's median time in milliseconds, NaN if it failed */
    double defaultMs();

    /** @return evaluations by status: ok, compile_error, launch_error, timeout, wrong */
    Map<String, Long> byStatus();

    /** @return the number of configs evaluated */
    int evaluations();

    /** @return the number of valid configs in the search space */
    int spaceSize();
}
