/* isthmus: dtype.h -- element-type plumbing shared by every kernel family.
 *
 * Prepended to every .cl source (after cuda_prelude.h on CUDA).  Expects:
 *   -DT=<ctype>    element type in memory: float double half int long uchar (ushort: copy only)
 *   -DACC=<ctype>  arithmetic type: T for integers, float for half, T for float/double
 *   -DIS_HALF=0|1  1 when T is half
 *   -DIS_BF16=0|1  1 when T is ushort holding bfloat16 bit patterns (then ACC is float)
 * Provides:
 *   LOAD(p,i)      element i of a __global T* as ACC (vload_half for half, bit shift for bf16)
 *   STORE(p,i,v)   store ACC v into element i of a __global T* (vstore_half, RTE, for half;
 *                  round to nearest even for bf16)
 *   BF16_TO_FLOAT(u) / FLOAT_TO_BF16(f)  bfloat16 bits (ushort) <-> float, on every device:
 *                  bf16 is the top half of a float32, so plain integer shifts convert it
 *                  (RNE on the way down, NaN kept quiet); no extension is needed
 *   T_ID / ACC_ID  small integer ids of T and ACC (ISTHMUS_ID_* below) usable in #if
 *   ACC_IS_FLOAT   1 if ACC is float/double (or half), 0 for integers
 *   UACC           unsigned twin of ACC for integers (wrap-around arithmetic like NumPy);
 *                  ACC itself for floating types
 *   ACC_LOWEST     identity of max over ACC: -INFINITY, INT_MIN, LONG_MIN, 0 (uchar/ushort)
 *   ISTHMUS_LOCAL_SIZE(x,y,z)  reqd_work_group_size on OpenCL, __launch_bounds__ on CUDA
 *   ISTHMUS_ALIGN(n)           alignment attribute for (local) arrays
 * Kernels never do arithmetic on `half`, so cl_khr_fp16 is not needed.
 */
#ifndef ISTHMUS_DTYPE_H
#define ISTHMUS_DTYPE_H

#ifdef __OPENCL_VERSION__
#  ifdef cl_khr_fp64
#    pragma OPENCL EXTENSION cl_khr_fp64 : enable
#  endif
#  define ISTHMUS_LOCAL_SIZE(x, y, z) __attribute__((reqd_work_group_size(x, y, z)))
#  define ISTHMUS_ALIGN(n) __attribute__((aligned(n)))
#endif

#ifndef T
#  error "isthmus: compile with -DT=<ctype>"
#endif
#ifndef ACC
#  define ACC T
#endif
#ifndef IS_HALF
#  define IS_HALF 0
#endif
#ifndef IS_BF16
#  define IS_BF16 0
#endif

/* type ids, resolved by token pasting: T_ID == ISTHMUS_ID_float etc. */
#define ISTHMUS_ID_float  1
#define ISTHMUS_ID_double 2
#define ISTHMUS_ID_half   3
#define ISTHMUS_ID_int    4
#define ISTHMUS_ID_long   5
#define ISTHMUS_ID_uchar  6
#define ISTHMUS_ID_ushort 7
#define ISTHMUS_ID_uint   8
#define ISTHMUS_ID_ulong  9
#define ISTHMUS_CAT_(a, b) a##b
#define ISTHMUS_CAT(a, b) ISTHMUS_CAT_(a, b)
#define T_ID   ISTHMUS_CAT(ISTHMUS_ID_, T)
#define ACC_ID ISTHMUS_CAT(ISTHMUS_ID_, ACC)

#if ACC_ID == ISTHMUS_ID_float || ACC_ID == ISTHMUS_ID_double || ACC_ID == ISTHMUS_ID_half
#  define ACC_IS_FLOAT 1
#else
#  define ACC_IS_FLOAT 0
#endif

#if ACC_ID == ISTHMUS_ID_int
#  define UACC uint
#  define ACC_LOWEST INT_MIN
#elif ACC_ID == ISTHMUS_ID_long
#  define UACC ulong
#  define ACC_LOWEST LONG_MIN
#elif ACC_ID == ISTHMUS_ID_uchar || ACC_ID == ISTHMUS_ID_ushort || ACC_ID == ISTHMUS_ID_uint
#  define UACC uint
#  define ACC_LOWEST 0
#elif ACC_ID == ISTHMUS_ID_ulong
#  define UACC ulong
#  define ACC_LOWEST 0
#else
#  define UACC ACC
#  define ACC_LOWEST (-INFINITY)
#endif

/* bfloat16 <-> float through the bits (as_uint/as_float: OpenCL built-ins, the prelude's on CUDA) */
#define BF16_TO_FLOAT(u) as_float((uint)(u) << 16)
#define FLOAT_TO_BF16(f) isthmus_float_to_bf16(f)
static inline ushort isthmus_float_to_bf16(float f)
{
    const uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u); /* NaN: keep sign and top payload, force quiet */
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* round to nearest, ties to even */
}

#if IS_HALF
#  define LOAD(p, i) vload_half((size_t)(i), (p))
#  define STORE(p, i, v) vstore_half((float)(v), (size_t)(i), (p))
#elif IS_BF16
#  define LOAD(p, i) BF16_TO_FLOAT((p)[i])
#  define STORE(p, i, v) ((p)[i] = FLOAT_TO_BF16((float)(v)))
#else
#  define LOAD(p, i) ((ACC)((p)[i]))
#  define STORE(p, i, v) ((p)[i] = (T)(v))
#endif

#endif /* ISTHMUS_DTYPE_H */
