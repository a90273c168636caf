/* isthmus: attn_mma.h -- what the attention kernels' tensor-core paths (attention.cl,
 * decode_attention.cl) use besides mma.h: softmax helpers in registers, and MMA_EMU, a portable
 * twin of the warp-level instructions for testing those paths on any OpenCL device.
 *
 * Included where MMA_PTX or MMA_EMU is 1 (after dtype.h).
 *   attn_pack(lo, hi)    two floats -> one register of two 16-bit values of T (lo in the low half),
 *                        rounded to nearest even (cvt.rn.f16x2/bf16x2.f32)
 *   attn_exp2(x)         2^x (ex2.approx.ftz.f32)
 *   attn_shfl_xor(x, m)  x of the lane whose id differs in the bits of m (shfl.sync.bfly)
 *   attn_all(p)          1 when p is true on every lane of the warp (vote.sync.all)
 *   ATTN_UNROLL          #pragma unroll (nothing under MMA_EMU)
 * MMA_EMU=1 (any device; a work-group of one warp, 32 work-items): mma.h's smem_addr, mma16816,
 *   ldsm4, ldsm4_t, cp_async16, CP_ASYNC_COMMIT/WAIT and the helpers above, emulated with exactly
 *   the fragment layouts of the instructions, through a local exchange array and barriers (every
 *   call must be reached by the whole work-group). The kernel declares ATTN_EMU_DECL and names its
 *   local ushort array in ATTN_EMU_SMEM; addresses are byte offsets into it (smem_addr is 0).
 *   The tests run the tensor-core paths' index arithmetic this way on PoCL.
 */
#ifndef ISTHMUS_ATTN_MMA_H
#define ISTHMUS_ATTN_MMA_H

#if defined(MMA_EMU) && MMA_EMU
#  define ATTN_EMU_DECL __local uint attn_emu_x[32 * 6]; __local float attn_emu_f[32]
/* (loops stay loops: unrolled, the emulation's barriers multiply the state a CPU work-group keeps) */
#  define ATTN_UNROLL
#  define ATTN_SMEM_ALIGN
#  define ATTN_LPTR __local

static inline float attn_emu_f16(uint h)   /* float16 bits -> float (exact) */
{
    const uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0u) return (s ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f;   /* 2^-24 */
    if (e == 31u) return as_float(s | 0x7f800000u | (m << 13));
    return as_float(s | ((e + 112u) << 23) | (m << 13));
}
static inline float attn_emu_val(uint bits)
{
#  if IS_BF16
    return as_float((bits & 0xffffu) << 16);
#  else
    return attn_emu_f16(bits & 0xffffu);
#  endif
}
static inline uint attn_pack(float lo, float hi)
{
#  if IS_BF16
    return (uint)isthmus_float_to_bf16(lo) | ((uint)isthmus_float_to_bf16(hi) << 16);
#  else
    ushort t[2];
    vstore_half_rte(lo, 0, (half*)t);
    vstore_half_rte(hi, 1, (half*)t);
    return (uint)t[0] | ((uint)t[1] << 16);
#  endif
}
static inline float attn_exp2(float x) { return exp2(x); }

static inline float attn_emu_shfl(float x, int m, __local float* f)
{
    const int l = (int)get_local_id(0);
    f[l] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    const float y = f[l ^ m];
    barrier(CLK_LOCAL_MEM_FENCE);
    return y;
}
static inline int attn_emu_all(int p, __local uint* x)
{
    const int l = (int)get_local_id(0);
    x[l] = p != 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    int all = 1;
    for (int i = 0; i < 32; ++i) all &= (int)x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    return all;
}
/* ldmatrix .x4: lane l gives the row address of matrix l/8, row l%8; lane l receives of matrix i
 * row l/4, elements 2(l%4), 2(l%4)+1 (.trans: rows 2(l%4), 2(l%4)+1 of column l/4) */
static inline void attn_emu_ldsm(uint* r, uint addr, int trans, __local const ushort* sm, __local uint* x)
{
    const int l = (int)get_local_id(0), g = l >> 2, t = l & 3;
    x[l] = addr / 2u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; ++i) {
        if (trans)
            r[i] = (uint)sm[x[i * 8 + 2 * t] + g] | ((uint)sm[x[i * 8 + 2 * t + 1] + g] << 16);
        else
            r[i] = (uint)sm[x[i * 8 + g] + 2 * t] | ((uint)sm[x[i * 8 + g] + 2 * t + 1] << 16);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
/* mma.sync m16n8k16 row.col: A element (r, k) is in lane (r%8)*4 + (k%8)/2, register
 * (r/8) + 2*(k/8), half k%2; B element (k, n) in lane n*4 + (k%8)/2, register k/8, half k%2 */
static inline void attn_emu_mma(float* d, const uint* a, uint b0, uint b1, __local uint* x)
{
    const int l = (int)get_local_id(0), g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i) x[l * 6 + i] = a[i];
    x[l * 6 + 4] = b0;
    x[l * 6 + 5] = b1;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = 0; e < 4; ++e) {
        const int r = g + 8 * (e >> 1), c = 2 * t + (e & 1);
        float s = 0.0f;
        for (int k = 0; k < 16; ++k) {
            const uint av = x[((r & 7) * 4 + (k & 7) / 2) * 6 + (r >> 3) + 2 * (k >> 3)] >> (16 * (k & 1));
            const uint bv = x[(c * 4 + (k & 7) / 2) * 6 + 4 + (k >> 3)] >> (16 * (k & 1));
            s += attn_emu_val(av) * attn_emu_val(bv);
        }
        d[e] += s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
static inline void attn_emu_cp16(uint dst, __global const ushort* src, int valid, __local ushort* sm)
{
    for (int i = 0; i < 8; ++i) sm[dst / 2u + (uint)i] = valid ? src[i] : (ushort)0;
}
#  define smem_addr(p) 0u
#  define ldsm4(r, addr) attn_emu_ldsm((r), (addr), 0, ATTN_EMU_SMEM, attn_emu_x)
#  define ldsm4_t(r, addr) attn_emu_ldsm((r), (addr), 1, ATTN_EMU_SMEM, attn_emu_x)
#  define mma16816(d, a, b0, b1) attn_emu_mma((d), (a), (b0), (b1), attn_emu_x)
#  define cp_async16(dst, src, valid) attn_emu_cp16((dst), (src), (valid), ATTN_EMU_SMEM)
#  define CP_ASYNC_COMMIT() do { } while (0)
#  define CP_ASYNC_WAIT(n) do { } while (0)
#  define attn_shfl_xor(x, m) attn_emu_shfl((x), (m), attn_emu_f)
#  define attn_all(p) attn_emu_all((p), attn_emu_x)

#else /* NVIDIA: inline PTX */
#  include "mma.h"
#  define ATTN_EMU_DECL
#  define ATTN_LPTR LPTR
#  define ATTN_UNROLL _Pragma("unroll")
#  define ATTN_SMEM_ALIGN ISTHMUS_ALIGN(128)
#  if IS_BF16
#    define ATTN_X2 "bf16x2"
#  else
#    define ATTN_X2 "f16x2"
#  endif
static inline uint attn_pack(float lo, float hi)
{
    uint r;
    __asm__("cvt.rn." ATTN_X2 ".f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
static inline float attn_exp2(float x)
{
    float y;
    __asm__("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
static inline float attn_shfl_xor(float x, int m)
{
    uint r;
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(as_uint(x)), "r"(m));
    return as_float(r);
}
static inline int attn_all(int p)
{
    uint r;
    __asm__ __volatile__("{ .reg .pred a, b; setp.ne.b32 a, %1, 0; vote.sync.all.pred b, a, 0xffffffff; "
                         "selp.u32 %0, 1, 0, b; }" : "=r"(r) : "r"(p));
    return (int)r;
}
#endif

#endif /* ISTHMUS_ATTN_MMA_H */
