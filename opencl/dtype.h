/* isthmus: dtype.h -- element-type plumbing shared by every kernel family.
 *
 * Prepended to every .cl source (after cuda_prelude.h on CUDA).  Expects:
 *   -DT=<ctype>    element type in memory: float double half int long uchar (ushort: copy only)
 *   -DACC=<ctype>  arithmetic type: T for integers, float for half, T for float/double
 *   -DIS_HALF=0|1  1 when T is half
 * Provides:
 *   LOAD(p,i)      element i of a __global T* as ACC (vload_half for half)
 *   STORE(p,i,v)   store ACC v into element i of a __global T* (vstore_half, RTE, for half)
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

#if IS_HALF
#  define LOAD(p, i) vload_half((size_t)(i), (p))
#  define STORE(p, i, v) vstore_half((float)(v), (size_t)(i), (p))
#else
#  define LOAD(p, i) ((ACC)((p)[i]))
#  define STORE(p, i, v) ((p)[i] = (T)(v))
#endif

#endif /* ISTHMUS_DTYPE_H */
