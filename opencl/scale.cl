/* isthmus: scale.cl -- out = alpha * x
 *
 * Kernel:
 *   __kernel void scale(const long n, const ACC alpha, __global const T* x, __global T* out)
 * dtypes: float double half bfloat16 (the 16-bit ones compute in float and round once on store).
 * out may be x (in place: each item reads the element it writes).
 * Tunables (-D): WG (work-group size), LAYOUT, GROUPS; their values, defaults and restrictions are
 *   declared once, in the op's spec (python/isthmus/ops/specs/scale.py).
 * Launch (1-D), local = (WG,):
 *   LAYOUT 0: an element per work-item, global = (ceil(n / WG) * WG,)
 *   LAYOUT 1 (CPUs): a contiguous chunk per work-item, read and written as 16-wide OpenCL vectors,
 *     global = (G * WG,), G = max(1, min(GROUPS, ceil(n / (WG * 64))))
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(LAYOUT) || !defined(WG)
#  error "scale.cl: build it through its op, which passes every tunable (-D)"
#endif

#if LAYOUT == 1
/* 16 elements of x as ACC, and 16 ACC values stored as T (one rounding, as STORE) */
#  if IS_HALF
#    define VLOAD16(i) vload_half16(0, x + (i))
#    define VSTORE16(v, i) vstore_half16((v), 0, out + (i))
#  elif IS_BF16
#    define VLOAD16(i) as_float16(convert_uint16(vload16(0, x + (i))) << 16)
#    define VSTORE16(v, i) vstore16(isthmus_float16_to_bf16(v), 0, out + (i))
/* FLOAT_TO_BF16 on 16 lanes: round to nearest even, NaN kept quiet */
static inline ushort16 isthmus_float16_to_bf16(float16 f)
{
    const uint16 u = as_uint16(f);
    const uint16 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort16(select(rounded, (u >> 16) | 0x40u, (u & 0x7fffffffu) > 0x7f800000u));
}
#  else
#    define VLOAD16(i) vload16(0, x + (i))
#    define VSTORE16(v, i) vstore16((v), 0, out + (i))
#  endif
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void scale(const long n, const ACC alpha, __global const T* x, __global T* out)
{
#if LAYOUT == 0
    const long i = get_global_id(0);
    if (i < n)
        STORE(out, i, alpha * (ACC)LOAD(x, i));
#else
    /* PoCL vectorizes LAYOUT 0 across work-items with a bounds mask per lane and a work-group per
     * WG elements; a chunk per item in explicit vectors ran about 1.3x that per core (#13) */
    const long items = (long)get_global_size(0);
    const long per = ((n + items - 1) / items + 63) / 64 * 64;
    long i = (long)get_global_id(0) * per;
    const long hi = min(i + per, n);
    for (; i + 64 <= hi; i += 64) {
#pragma unroll
        for (int k = 0; k < 4; ++k) VSTORE16(alpha * VLOAD16(i + 16 * k), i + 16 * k);
    }
    for (; i < hi; ++i)
        STORE(out, i, alpha * (ACC)LOAD(x, i));
#endif
}
