/**
 * Service-provider interfaces between the public Java API and the runtime that implements it.
 *
 * <p>The isthmus Python package implements these interfaces with JPype proxies
 * ({@code python/isthmus/java/spi/}, one module per concern); applications never use them directly. The rules
 * that make Python implementations reliable hold for every interface here: no default
 * methods, no overloads, coarse calls (handles and buffers, never elements), and every
 * failure reported as an {@link io.isthmus.IsthmusException} subclass. Dtypes cross as their
 * NumPy names; shapes as {@code long[]}. A library op crosses once:
 * {@link io.isthmus.spi.Runtime#op} returns an {@link io.isthmus.spi.OpResult} with the result's
 * handle, shape and dtype. The interfaces change with the runtime that ships them (the jar inside
 * the Python package); a method that changes keeps working, deprecated, for one release.
 */
package io.isthmus.spi;
