/* isthmus: cuda_prelude.h -- maps the OpenCL C subset used by the opencl/ kernels onto CUDA C++
 * so that NVRTC compiles the very same kernel sources.
 *
 * Build order (CUDA): cuda_prelude.h + dtype.h + <family>.cl, concatenated, compiled by
 * NVRTC with the same -D options as on OpenCL (-DT=.. -DACC=.. -DIS_HALF=.. + tunables).
 *
 * Rules (see DESIGN.md, "One source for both backends"):
 *  - only the double-underscore qualifiers are defined (__kernel, __global, __local,
 *    __constant); never `global`/`local`/`kernel`, which would clash with CUDA's headers;
 *  - NVRTC has no C library headers: the limits and INFINITY come from here;
 *  - no header is included at all: `half` is 16-bit storage (unsigned short) converted
 *    with the PTX cvt instructions, so no cuda_fp16.h / include path is needed;
 *  - assumes an LP64 host (Linux): OpenCL `long` is 64-bit and so must CUDA's be.
 */
#ifndef ISTHMUS_CUDA_PRELUDE_H
#define ISTHMUS_CUDA_PRELUDE_H
#define ISTHMUS_CUDA 1

static_assert(sizeof(long) == 8, "isthmus kernels need a 64-bit long (LP64 host)");

/* ---- address-space qualifiers and kernel marker ---- */
#define __kernel extern "C" __global__
#define __global
#define __local __shared__
#define __constant const
#define __private
#ifndef restrict
#define restrict __restrict__
#endif

/* ---- scalar type names of OpenCL C ---- */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef unsigned short half;   /* storage only: use vload_half / vstore_half */

/* ---- work-item functions ---- */
__device__ __forceinline__ size_t get_global_id(int d) {
    return d == 0 ? (size_t)blockIdx.x * blockDim.x + threadIdx.x
         : d == 1 ? (size_t)blockIdx.y * blockDim.y + threadIdx.y
         : d == 2 ? (size_t)blockIdx.z * blockDim.z + threadIdx.z : 0;
}
__device__ __forceinline__ size_t get_local_id(int d) {
    return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : d == 2 ? threadIdx.z : 0;
}
__device__ __forceinline__ size_t get_group_id(int d) {
    return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : d == 2 ? blockIdx.z : 0;
}
__device__ __forceinline__ size_t get_local_size(int d) {
    return d == 0 ? blockDim.x : d == 1 ? blockDim.y : d == 2 ? blockDim.z : 1;
}
__device__ __forceinline__ size_t get_num_groups(int d) {
    return d == 0 ? gridDim.x : d == 1 ? gridDim.y : d == 2 ? gridDim.z : 1;
}
__device__ __forceinline__ size_t get_global_size(int d) {
    return get_num_groups(d) * get_local_size(d);
}
__device__ __forceinline__ uint get_work_dim(void) {
    return gridDim.z * blockDim.z > 1 ? 3 : (gridDim.y * blockDim.y > 1 ? 2 : 1);
}

/* ---- synchronisation ---- */
#define CLK_LOCAL_MEM_FENCE 1
#define CLK_GLOBAL_MEM_FENCE 2
#define barrier(flags) __syncthreads()
#define mem_fence(flags) __threadfence_block()

/* ---- attributes used through dtype.h's portable macros ---- */
#define ISTHMUS_LOCAL_SIZE(x, y, z) __launch_bounds__((x) * (y) * (z))
#define ISTHMUS_ALIGN(n) __align__(n)

/* ---- limits and constants (no <float.h>/<limits.h>/<math.h> under NVRTC) ---- */
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
#define HALF_MAX 65504.0f
#define CHAR_BIT 8
#define UCHAR_MAX 255
#define USHRT_MAX 65535
#define SHRT_MAX 32767
#define SHRT_MIN (-32767 - 1)
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 0xffffffffU
#define LONG_MAX 0x7fffffffffffffffL
#define LONG_MIN (-0x7fffffffffffffffL - 1L)
#define ULONG_MAX 0xffffffffffffffffUL

/* ---- math built-ins of OpenCL C missing (by name) in CUDA ---- */
__device__ __forceinline__ float mad(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double mad(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float native_exp(float x) { return __expf(x); }
__device__ __forceinline__ float native_recip(float x) { return __frcp_rn(x); }
__device__ __forceinline__ float native_divide(float a, float b) { return __fdividef(a, b); }
/* portable by name (CUDA's own, float and double overloads; the kernels may call these as they
 * are, tests/ops/test_ops_cuda_prelude.py holds them to this list): exp fmax fmin fma fmaf sqrt min max
 * make_uint4 log tanh */

/* ---- inline PTX: kernels spell it the GNU way (`__asm__ __volatile__`, the only spelling OpenCL C
 * has); NVRTC's front end knows only `asm` ---- */
#define __asm__ asm
#define __volatile__ volatile

/* ---- bit casts of OpenCL C (dtype.h converts bfloat16 with them) ---- */
__device__ __forceinline__ float as_float(uint u) { return __uint_as_float(u); }
__device__ __forceinline__ uint as_uint(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float as_float(int i) { return __int_as_float(i); }
__device__ __forceinline__ int as_int(float f) { return __float_as_int(f); }

/* ---- half <-> float (round to nearest even, like OpenCL's vstore_half default) ---- */
__device__ __forceinline__ float isthmus_h2f(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short isthmus_f2h(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float vload_half(size_t i, const half* p) { return isthmus_h2f(p[i]); }
__device__ __forceinline__ void vstore_half(float v, size_t i, half* p) { p[i] = isthmus_f2h(v); }
__device__ __forceinline__ void vstore_half_rte(float v, size_t i, half* p) { p[i] = isthmus_f2h(v); }

/* ---- float4 loads/stores (CUDA's float4 type; pointers must be 16-byte aligned) ---- */
__device__ __forceinline__ float4 vload4(size_t i, const float* p) {
    return reinterpret_cast<const float4*>(p)[i];
}
__device__ __forceinline__ void vstore4(float4 v, size_t i, float* p) {
    reinterpret_cast<float4*>(p)[i] = v;
}

/* ---- 32/64-bit atomics on global/local memory (OpenCL 1.x names; they return the old value).
 * Template parameters are not named T: kernels arrive with T defined as a macro. ---- */
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_add(volatile IsthmusP* p, IsthmusV v) { return atomicAdd(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_sub(volatile IsthmusP* p, IsthmusV v) { return atomicSub(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP>
__device__ __forceinline__ IsthmusP atomic_inc(volatile IsthmusP* p) { return atomicAdd(const_cast<IsthmusP*>(p), (IsthmusP)1); }
template <typename IsthmusP>
__device__ __forceinline__ IsthmusP atomic_dec(volatile IsthmusP* p) { return atomicSub(const_cast<IsthmusP*>(p), (IsthmusP)1); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_xchg(volatile IsthmusP* p, IsthmusV v) { return atomicExch(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_min(volatile IsthmusP* p, IsthmusV v) { return atomicMin(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_max(volatile IsthmusP* p, IsthmusV v) { return atomicMax(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_and(volatile IsthmusP* p, IsthmusV v) { return atomicAnd(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_or(volatile IsthmusP* p, IsthmusV v) { return atomicOr(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_xor(volatile IsthmusP* p, IsthmusV v) { return atomicXor(const_cast<IsthmusP*>(p), (IsthmusP)v); }
template <typename IsthmusP, typename IsthmusC, typename IsthmusV>
__device__ __forceinline__ IsthmusP atomic_cmpxchg(volatile IsthmusP* p, IsthmusC c, IsthmusV v) {
    return atomicCAS(const_cast<IsthmusP*>(p), (IsthmusP)c, (IsthmusP)v);
}

#endif /* ISTHMUS_CUDA_PRELUDE_H */
