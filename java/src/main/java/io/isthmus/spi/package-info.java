/**
 * Service-provider interfaces between the public Java API and the runtime that implements it.
 *
 * <p>The isthmus Python package implements these interfaces with JPype proxies
 * ({@code python/isthmus/java/spi/}, one module per concern); applications never use them directly. The rules
 * that make Python implementations reliable hold for every interface here: no default
 * methods, no overloads, coarse calls (handles and buffers, never elements), and every
 * failure reported as an {@link io.isthmus.IsthmusException} subclass. Dtypes cross as their
 * NumPy names; shapes as {@code long[]}. A library op crosses once, its arguments in slots
 * ({@link io.isthmus.spi.OpHandle#call4}) or an array ({@link io.isthmus.spi.OpHandle#call}),
 * and returns an {@link io.isthmus.spi.OpResult} with the result's handle, shape and dtype. The
 * interfaces change with the runtime that ships them (the jar inside the Python package), both
 * halves at once.
 */
package io.isthmus.spi;
