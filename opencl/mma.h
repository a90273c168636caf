/* isthmus: mma.h -- tile helpers for NVIDIA's tensor cores, shared by the kernels that use them
 * (gemm_mma.cl, attention): inline PTX, for CUDA through NVRTC and NVIDIA's OpenCL.
 *
 * A kernel source includes it (`#include "mma.h"`) after dtype.h's macros are set; the op's source
 * text expands the include in place (python/isthmus/ops/spec.py), so the header is part of the
 * source a tuned config is keyed by. Everything but LPTR is defined only where MMA_PTX is 1.
 *   LPTR                 pointer qualifier of local memory (nothing in CUDA, where __shared__
 *                        pointers are generic; __local in OpenCL)
 *   MMA_AB               the operand type of mma/wgmma: "bf16.bf16" (IS_BF16) or "f16.f16"
 *   MMA_UINT4_ZERO       a uint4 of zeros (16 bytes: a zero-filled copy)
 *   smem_addr(p)         the shared-state-space address (32 bits) of a local-memory pointer
 *   mma16816(d, a, b0, b1)   d += A(16x16, 4 regs of 2 elements) * B(16x8, 2 regs), f32 d[4];
 *                        lane l (g = l/4, t = l%4): d rows g, g+8, columns 2t, 2t+1
 *   ldsm4(r, addr), ldsm4_t(r, addr)   ldmatrix .x4 (.trans): four 8x8 matrices, lane l gives the
 *                        row address of matrix l/8, row l%8
 *   cp_async16(dst, src, valid)        16-byte global -> local copy (zero-filled when !valid)
 *   CP_ASYNC_COMMIT(), CP_ASYNC_WAIT(n)  close a group of cp.async; wait until <= n are in flight
 *   wg_desc(addr, lbo, sbo)            wgmma shared-memory matrix descriptor, 128-byte swizzle
 *   WG_FENCE(), WG_COMMIT(), WG_WAIT(n)  wgmma.fence / commit_group / wait_group
 *   PROXY_FENCE()        local-memory writes of the generic proxy made visible to wgmma's async proxy
 *   MMA_WG_FENCE_ACC(d, n)   an empty asm "rewriting" d[0..n): no read or copy of the wgmma
 *                        accumulators moves across a wait
 *   MMA_WGMMA_SS_DEFINE(NAME, N, TNSP)  defines static void NAME(float* d, ulong da, ulong db):
 *                        wgmma.mma_async m64nNk16 (N 64, 128 or 256), f32 accumulators d[N/2],
 *                        both operands in local memory (descriptors), TNSP the transpose
 *                        immediates of A and B as a string ("0, 1": A K-major, B N-major)
 * New helpers go at the end of this file; the names above are used by more than one kernel.
 */
#ifndef ISTHMUS_MMA_H
#define ISTHMUS_MMA_H

/* a pointer into local memory: CUDA's __shared__ is no pointer qualifier (its pointers are generic) */
#ifdef ISTHMUS_CUDA
#  define LPTR
#else
#  define LPTR __local
#endif

#if defined(MMA_PTX) && MMA_PTX
/* ---- NVIDIA: inline PTX (CUDA through NVRTC, and NVIDIA's OpenCL) ---- */
#  if IS_BF16
#    define MMA_AB "bf16.bf16"
#  else
#    define MMA_AB "f16.f16"
#  endif
#  ifdef ISTHMUS_CUDA
/* a __shared__ array is reached through a generic pointer in CUDA: convert it */
static inline uint smem_addr(const ushort* p)
{
    uint a;
    __asm__("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"((size_t)p));
    return a;
}
#    define MMA_UINT4_ZERO make_uint4(0u, 0u, 0u, 0u)
#  else
/* an OpenCL __local pointer already is an address in the shared state space */
static inline uint smem_addr(const __local ushort* p) { return (uint)(size_t)p; }
#    define MMA_UINT4_ZERO ((uint4)(0u))
#  endif

static inline void mma16816(float* d, const uint* a, uint b0, uint b1)
{
    __asm__ __volatile__("mma.sync.aligned.m16n8k16.row.col.f32." MMA_AB ".f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static inline void ldsm4(uint* r, uint addr)
{
    __asm__ __volatile__("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

static inline void ldsm4_t(uint* r, uint addr)
{
    __asm__ __volatile__("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

static inline void cp_async16(uint dst, __global const ushort* src, int valid)
{
    __asm__ __volatile__("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
#  define CP_ASYNC_COMMIT() __asm__ __volatile__("cp.async.commit_group;" ::: "memory")
#  define CP_ASYNC_WAIT(n) __asm__ __volatile__("cp.async.wait_group %0;" :: "n"(n) : "memory")

/* a shared-memory matrix descriptor: start address, leading and stride byte offsets, 128-byte
 * swizzle (the fields drop the low 4 bits) */
static inline unsigned long long wg_desc(uint addr, uint lbo, uint sbo)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
         | ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
#  define WG_FENCE() __asm__ __volatile__("wgmma.fence.sync.aligned;" ::: "memory")
#  define WG_COMMIT() __asm__ __volatile__("wgmma.commit_group.sync.aligned;" ::: "memory")
#  define WG_WAIT(n) __asm__ __volatile__("wgmma.wait_group.sync.aligned %0;" :: "n"(n) : "memory")
/* local-memory writes of the generic proxy (cp.async, stores) made visible to wgmma's async proxy */
#  define PROXY_FENCE() __asm__ __volatile__("fence.proxy.async.shared::cta;" ::: "memory")
/* The compiler sees a wgmma as an ordinary instruction that writes d at once; these empty
 * statements "rewrite" every accumulator so that no read or copy of d moves across a wait */
#  define MMA_WG_FENCE_ACC(d, n)                                                                    \
    do {                                                                                             \
        _Pragma("unroll")                                                                            \
        for (int i_ = 0; i_ < (n); ++i_) __asm__ __volatile__("" : "+f"((d)[i_]) :: "memory");      \
    } while (0)

/* wgmma.mma_async m64nNk16 with both operands in local memory: the accumulator operand lists */
#  define WG_D4(i) "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#  define WG_D16(i) WG_D4(i), WG_D4((i) + 4), WG_D4((i) + 8), WG_D4((i) + 12)
#  define WG_D32(i) WG_D16(i), WG_D16((i) + 16)
#  define WG_D64(i) WG_D32(i), WG_D32((i) + 32)
#  define WG_D128(i) WG_D64(i), WG_D64((i) + 64)
#  define MMA_WG_OUT_64 WG_D32(0)
#  define MMA_WG_OUT_128 WG_D64(0)
#  define MMA_WG_OUT_256 WG_D128(0)
/* "%0,...,%(N/2-1)", then the operands da, db and the scale-d predicate */
#  define MMA_WG_R32 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23," \
                     "%24,%25,%26,%27,%28,%29,%30,%31"
#  define MMA_WG_R64 MMA_WG_R32 ",%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45," \
                     "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#  define MMA_WG_R128 MMA_WG_R64 ",%64,%65,%66,%67," \
                      "%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89," \
                      "%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108," \
                      "%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125," \
                      "%126,%127"
#  define MMA_WG_REGS_64 MMA_WG_R32
#  define MMA_WG_REGS_128 MMA_WG_R64
#  define MMA_WG_REGS_256 MMA_WG_R128
#  define MMA_WG_P_64 "%34"
#  define MMA_WG_P_128 "%66"
#  define MMA_WG_P_256 "%130"
#  define MMA_WG_AB_64 "%32, %33"
#  define MMA_WG_AB_128 "%64, %65"
#  define MMA_WG_AB_256 "%128, %129"
#  define MMA_WGMMA_SS_DEFINE(NAME, N, TNSP) MMA_WGMMA_SS_DEFINE_(NAME, N, TNSP)
#  define MMA_WGMMA_SS_DEFINE_(NAME, N, TNSP)                                                       \
static inline void NAME(float* d, unsigned long long da, unsigned long long db)                      \
{                                                                                                    \
    __asm__ __volatile__("{ .reg .pred p; setp.ne.b32 p, " MMA_WG_P_##N ", 0;\n"                   \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." MMA_AB " {"                      \
                 MMA_WG_REGS_##N                                                                     \
                 "}, " MMA_WG_AB_##N ", p, 1, 1, " TNSP "; }"                                        \
                 : MMA_WG_OUT_##N                                                                    \
                 : "l"(da), "l"(db), "r"(1));                                                        \
}
#endif /* MMA_PTX */

#endif /* ISTHMUS_MMA_H */
