/**
 * The Java API of isthmus: devices, device buffers, kernels and library operations of the
 * isthmus runtime, which runs in the same process (the JVM is hosted by Python through JPype).
 *
 * <p>Start at {@link io.isthmus.Isthmus#get()}. Launch applications with
 * {@code isthmus java -cp app.jar com.example.Main}. All resources are {@link AutoCloseable};
 * all errors are unchecked {@link io.isthmus.IsthmusException}s.
 */
package io.isthmus;
