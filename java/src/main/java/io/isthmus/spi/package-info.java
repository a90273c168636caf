/**
 * Service-provider interfaces between the public Java API and the runtime that implements it.
 *
 * <p>The isthmus Python package implements these interfaces with JPype proxies
 * ({@code python/isthmus/java/provider.py}); applications never use them directly. The rules
 * that make Python implementations reliable hold for every interface here: no default
 * methods, no overloads, coarse calls (handles and buffers, never elements), and every
 * failure reported as an {@link io.isthmus.IsthmusException} subclass. Dtypes cross as their
 * NumPy names; shapes as {@code long[]}.
 */
package io.isthmus.spi;
