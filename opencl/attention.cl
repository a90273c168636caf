/* isthmus: attention.cl -- softmax attention without the score matrix (FlashAttention-2's order)
 *
 *   o[i] = sum_j softmax_j(s_ij) v_j     s_ij = scale * q_i . k_j   (softcap: c * tanh(s_ij / c))
 *   lse[i] = log(sum_j exp(s_ij))        (natural log, over the keys row i sees; -inf when none)
 *
 * Kernels:
 *   __kernel void attention(const int sq, const int sk, const int heads, const int kv_heads,
 *       const float scale, const int causal, const int window, const float softcap,
 *       __global const int* cu_q, __global const int* cu_k, const int batch, const int total_q,
 *       __global const T* q, __global const T* k, __global const T* v, __global T* o,
 *       __global float* lse, const int want_lse)
 *
 * attention: q (rows, heads, HD), k and v (rows, kv_heads, HD), o like q, all contiguous.
 * Dense batches (batch > 0 and cu_q unused: total_q < 0): sequence b's query rows are
 * b*sq .. b*sq+sq-1, its key rows b*sk ..; lse is (batch, heads, sq).  Variable lengths (total_q >= 0):
 * sequence b's query rows are cu_q[b] .. cu_q[b+1]-1, its key rows cu_k[b] .. cu_k[b+1]-1, lse is
 * (heads, total_q) (FlashAttention's two layouts).  Query head h reads kv head h / (heads/kv_heads).
 * Masks (per sequence of lq queries and lk keys, query i aligned to key i + lk - lq):
 *   causal: key j <= i + lk - lq;   window > 0: key j > i + lk - lq - window (and, without causal,
 *   j < i + lk - lq + window).  A row that sees no key writes zeros (and lse -inf).
 *
 * Scheme (a work-group per (query tile, head)): BQ work-items, one query row each, its q row
 * (times scale) and its f32 output accumulator in registers.  The group walks the keys its rows can
 * see in tiles of BKT keys: it copies the tile's K and V rows into local memory (f32), then each
 * row takes its BKT scores, the tile's max, rescales its accumulator and running sum by
 * exp(old max - new max) and adds exp(s - max) * v (online softmax): one read of K and V per
 * query tile, no score matrix anywhere.  Dense batches number tiles (batch, tile); variable
 * lengths number them over the sequences in order (group g is the g-th tile of all sequences'
 * tiles; the grid holds ceil(total_q/BQ) + batch groups, enough for any lengths, the ones past
 * the last tile return at once), so a graph replays with other lengths in cu_q/cu_k.
 *
 * MMA_PTX=1 (CUDA and NVIDIA's OpenCL, float16/bfloat16 with HD a multiple of 16): the tensor-core
 * path (FlashAttention-2's): a work-group of WARPS warps takes BQ = 16*MI*WARPS query rows, warp w
 * rows 16*MI*w ..; the Q tile comes into local memory once (QREG=1: its m16n8k16 A fragments then
 * stay in registers; QREG=0: re-read with ldmatrix at each key tile); K and V tiles of BKV keys
 * stream through a ring of STAGES stages with cp.async (16 bytes, zero-filled past the keys), the
 * copies of tile i + STAGES-1 in flight while tile i is multiplied.  Per key tile each warp computes
 * S = Q K^T (mma.sync m16n8k16, f32 accumulators: lane l holds rows l/4 and l/4 + 8 of each 16-row
 * block), masks it only where the tile is not wholly visible to the warp's rows, takes the online
 * softmax in registers (scores in log2 units, row max over the 4 lanes of a row with shuffles, the
 * running sum kept per lane and added up once at the end), rounds P to the input dtype and adds
 * P V to the output fragments (the S accumulator layout of two 8-key fragments is the A fragment
 * layout of one 16-key step).  Warps whose rows see none of a tile skip it; causal dense batches
 * launch the longest query tiles first.  Local rows are padded by 8 elements (ldmatrix without bank
 * conflicts).  DYN_SMEM=1 (CUDA): the local memory is dynamic, SMEM_ELEMS * 2 bytes at launch.
 *
 * Tunables (-D): portable: BQ (query rows per group = work-group size), BKT (keys per tile);
 *   MMA_PTX: WARPS, MI, BKV, STAGES, QREG; HD (head dim, fixed per build, 1..256).  Declared in
 *   python/isthmus/ops/specs/attention.py (SPEC; MMA: the tensor-core path's).
 * Launch (2-D): local = (BQ, 1), global = (tiles * BQ, heads)   (MMA_PTX: local (32*WARPS, 1),
 *   global (tiles * 32*WARPS, heads)).
 */
#ifndef MMA_PTX
#  define MMA_PTX 0
#endif
#ifndef MMA_EMU
#  define MMA_EMU 0
#endif
#if !MMA_PTX && !MMA_EMU && (!defined(BQ) || !defined(BKT) || !defined(HD))
#  error "attention.cl: build it through its op, which passes every tunable (-D)"
#endif

/* the key range [*lo, *hi) query i of a sequence of lq queries over lk keys sees */
static inline void visible(int i, int lq, int lk, int causal, int window, int* lo, int* hi)
{
    const int at = i + lk - lq;   /* the key aligned with query i */
    int a = 0, b = lk;
    if (causal) b = min(b, at + 1);
    if (window > 0) {
        a = max(a, at - window + 1);
        if (!causal) b = min(b, at + window);
    }
    *lo = a;
    *hi = max(a, b);
}


#if MMA_PTX || MMA_EMU
/* ---- the tensor-core path (NVIDIA: inline PTX; mma16816, ldsm4, cp_async16, ... from mma.h) ---- */
#include "attn_mma.h"
#define ATTN_EMU_SMEM fa_smem
#if !defined(WARPS) || !defined(MI) || !defined(BKV) || !defined(STAGES) || !defined(QREG) || !defined(HD)
#  error "attention.cl: build it through its op, which passes every tunable (-D)"
#endif
#if HD % 16 != 0 || BKV % 16 != 0 || STAGES < 2
#  error "attention.cl: the tensor-core path needs HD and BKV multiples of 16 and STAGES >= 2"
#endif
#ifndef DYN_SMEM
#  define DYN_SMEM 0
#endif
#define NT (32 * WARPS)
#define BQ (16 * MI * WARPS)     /* query rows of a work-group */
#define RS (HD + 8)              /* local row stride (elements): 16 bytes of padding */
#define Q_ELEMS (BQ * RS)
#define KV_ELEMS (BKV * RS)      /* one K (or V) tile */
#define STAGE_ELEMS (2 * KV_ELEMS)
#if QREG   /* Q is read into registers before the ring starts: they share the memory */
#  define KV_BASE 0
#  define SMEM_ELEMS (Q_ELEMS > STAGES * STAGE_ELEMS ? Q_ELEMS : STAGES * STAGE_ELEMS)
#else
#  define KV_BASE Q_ELEMS
#  define SMEM_ELEMS (Q_ELEMS + STAGES * STAGE_ELEMS)
#endif
#define KD (HD / 16)    /* k16 steps of Q K^T */
#define NJ (BKV / 8)    /* 8-key fragments of S */
#define ND (HD / 8)     /* 8-column fragments of O */
#define KJ (BKV / 16)   /* k16 steps of P V */
#define CR (HD / 8)     /* 16-byte chunks of a row */
#define FA_LOG2E 1.4426950408889634f
#define FA_LN2 0.6931471805599453f

/* K and V rows t0 .. t0+BKV-1 of the sequence into stage st (rows past the keys: zeros) */
#define FA_LOAD_KV(st, t0)                                                                           \
    do {                                                                                             \
        for (int c_ = tid; c_ < BKV * CR; c_ += NT) {                                                \
            const int r_ = c_ / CR, j_ = (t0) + r_;                                                  \
            const int ok_ = j_ < lk;                                                                 \
            const long off_ = (long)(ok_ ? j_ : 0) * kstride + (c_ % CR) * 8;                        \
            const uint d_ = sbase + 2u * (uint)(KV_BASE + (st) * STAGE_ELEMS + r_ * RS + (c_ % CR) * 8); \
            cp_async16(d_, kp + off_, ok_);                                                          \
            cp_async16(d_ + 2u * KV_ELEMS, vp + off_, ok_);                                          \
        }                                                                                            \
    } while (0)

__kernel ISTHMUS_LOCAL_SIZE(NT, 1, 1)
void attention(const int sq, const int sk, const int heads, const int kv_heads,
               const float scale, const int causal, const int window, const float softcap,
               __global const int* cu_q, __global const int* cu_k, const int batch, const int total_q,
               __global const T* q, __global const T* k, __global const T* v, __global T* o,
               __global float* lse, const int want_lse)
{
#if DYN_SMEM
    extern __shared__ __align__(16) ushort fa_smem[];
#else
    __local ushort fa_smem[SMEM_ELEMS] ATTN_SMEM_ALIGN;
#endif
    ATTN_EMU_DECL;
    const int tid = (int)get_local_id(0);
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3, lj = lane >> 3, lr = lane & 7;
    const int h = (int)get_group_id(1);
    const int hk = h / (heads / kv_heads);
    int gi = (int)get_group_id(0);
    int b, lq, lk, q0, k0, tile;
    if (total_q < 0) {   /* dense: tile-major over the batch, causal's longest tiles first */
        const int tiles = (sq + BQ - 1) / BQ;
        b = gi % batch;
        tile = gi / batch;
        if (causal) tile = tiles - 1 - tile;
        lq = sq; lk = sk; q0 = b * sq; k0 = b * sk;
    } else {             /* variable lengths: the gi-th tile over all sequences */
        for (b = 0; b < batch; ++b) {
            const int n = (cu_q[b + 1] - cu_q[b] + BQ - 1) / BQ;
            if (gi < n) break;
            gi -= n;
        }
        if (b == batch) return;   /* past the last tile: the whole group (before any barrier) */
        tile = gi;
        q0 = cu_q[b]; lq = cu_q[b + 1] - q0;
        k0 = cu_k[b]; lk = cu_k[b + 1] - k0;
    }
    const int qr0 = tile * BQ;                  /* the group's first query row in its sequence */
    const int last = min(lq, qr0 + BQ) - 1;
    int tlo, thi, lo_, hi_;
    visible(qr0, lq, lk, causal, window, &tlo, &hi_);
    visible(last, lq, lk, causal, window, &lo_, &thi);
    tlo = tlo / BKV * BKV;
    const int ntiles = thi > tlo ? (thi - tlo + BKV - 1) / BKV : 0;

    const uint sbase = smem_addr(fa_smem);
    const long kstride = (long)kv_heads * HD;
    __global const ushort* kp = (__global const ushort*)k + (long)k0 * kstride + (long)hk * HD;
    __global const ushort* vp = (__global const ushort*)v + (long)k0 * kstride + (long)hk * HD;

    /* the Q tile into local memory (rows past the sequence: zeros) */
    for (int c = tid; c < BQ * CR; c += NT) {
        const int r = c / CR, ok = qr0 + r < lq;
        __global const ushort* src = (__global const ushort*)q
            + ((long)(q0 + min(qr0 + r, lq - 1)) * heads + h) * HD + (c % CR) * 8;
        cp_async16(sbase + 2u * (uint)(r * RS + (c % CR) * 8), src, ok);
    }
    CP_ASYNC_COMMIT();
    const int wq0 = warp * MI * 16;             /* the warp's first row in the tile */
#if QREG
    uint qf[MI][KD][4];
    CP_ASYNC_WAIT(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    ATTN_UNROLL
    for (int i = 0; i < MI; ++i)
    ATTN_UNROLL
        for (int kk = 0; kk < KD; ++kk)
            ldsm4(qf[i][kk], sbase + 2u * (uint)((wq0 + i * 16 + lr + (lj & 1) * 8) * RS + kk * 16 + (lj >> 1) * 8));
    barrier(CLK_LOCAL_MEM_FENCE);   /* every warp has its fragments: the ring may overwrite Q */
#endif
ATTN_UNROLL
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) FA_LOAD_KV(s, tlo + s * BKV);
        CP_ASYNC_COMMIT();
    }

    /* this lane's rows (i, hh): qr0 + wq0 + 16 i + g + 8 hh; the keys each sees */
    int rlo[MI][2], rhi[MI][2];
    float m[MI][2], l[MI][2], acc[MI][ND][4];
ATTN_UNROLL
    for (int i = 0; i < MI; ++i) {
ATTN_UNROLL
        for (int hh = 0; hh < 2; ++hh) {
            const int r = qr0 + wq0 + i * 16 + g + 8 * hh;
            if (r < lq) {
                visible(r, lq, lk, causal, window, &rlo[i][hh], &rhi[i][hh]);
            } else {
                rlo[i][hh] = 0; rhi[i][hh] = 0;
            }
            m[i][hh] = -INFINITY;
            l[i][hh] = 0.0f;
        }
ATTN_UNROLL
        for (int n = 0; n < ND; ++n)
ATTN_UNROLL
            for (int e = 0; e < 4; ++e) acc[i][n][e] = 0.0f;
    }
    /* the warp's rows wa..wb and the keys they see: wlo (wa's first, the smallest) .. whi (wb's end) */
    const int wa = qr0 + wq0, wb = min(lq, wa + MI * 16) - 1;
    int wlo = 0, whi = 0, wlo_b = 0, whi_a = 0;
    if (wa < lq) {
        visible(wa, lq, lk, causal, window, &wlo, &whi_a);
        visible(wb, lq, lk, causal, window, &wlo_b, &whi);
    }
    const int capped_ = softcap > 0.0f;
    const float sl2 = capped_ ? scale / softcap : scale * FA_LOG2E;   /* softcap: tanh's argument */
    const float cap2 = softcap * FA_LOG2E;

    int rs = 0, ws = STAGES - 1;   /* the stage read now, the stage refilled next */
    for (int it = 0; it < ntiles; ++it) {
        const int t0 = tlo + it * BKV;
        CP_ASYNC_WAIT(STAGES - 2);            /* this work-item's copies of tile it have landed */
        barrier(CLK_LOCAL_MEM_FENCE);   /* everyone's; every warp is done with tile it - 1 */
        {
            const int nk = it + STAGES - 1;
            if (nk < ntiles) FA_LOAD_KV(ws, tlo + nk * BKV);
            CP_ASYNC_COMMIT();
            ws = ws + 1 == STAGES ? 0 : ws + 1;
        }
#if MMA_EMU
        /* every tile: the emulation's barriers stay out of a data-dependent branch inside the loop, which PoCL
         * 5.0 compiles wrong or not at all (gemm.cl's rows kernel; pocl issue 1435); a tile no row sees adds
         * nothing (its scores are masked to -inf, the rows' sums and outputs are unchanged) */
        {
#else
        if (wa < lq && t0 < whi && t0 + BKV > wlo) {   /* some row of the warp sees some key of the tile */
#endif
            const uint kb = sbase + 2u * (uint)(KV_BASE + rs * STAGE_ELEMS);
            const uint vb = kb + 2u * (uint)KV_ELEMS;
            float s[MI][NJ][4];
ATTN_UNROLL
            for (int i = 0; i < MI; ++i)
ATTN_UNROLL
                for (int j = 0; j < NJ; ++j)
ATTN_UNROLL
                    for (int e = 0; e < 4; ++e) s[i][j][e] = 0.0f;
            /* S = Q K^T */
ATTN_UNROLL
            for (int kk = 0; kk < KD; ++kk) {
#if QREG
#  define QF(i) qf[i][kk]
#else
                uint qa[MI][4];
    ATTN_UNROLL
                for (int i = 0; i < MI; ++i)
                    ldsm4(qa[i], sbase + 2u * (uint)((wq0 + i * 16 + lr + (lj & 1) * 8) * RS + kk * 16 + (lj >> 1) * 8));
#  define QF(i) qa[i]
#endif
ATTN_UNROLL
                for (int j = 0; j < NJ; j += 2) {
                    uint r4[4];
                    ldsm4(r4, kb + 2u * (uint)((j * 8 + lr + (lj >> 1) * 8) * RS + kk * 16 + (lj & 1) * 8));
ATTN_UNROLL
                    for (int i = 0; i < MI; ++i) {
                        mma16816(s[i][j], QF(i), r4[0], r4[1]);
                        mma16816(s[i][j + 1], QF(i), r4[2], r4[3]);
                    }
                }
#undef QF
            }
            /* scores in log2 units; the mask only where the tile is not wholly seen by the warp's
             * rows (the first keys seen grow with the row, so do the ends) */
            const int full = wlo_b <= t0 && whi_a >= t0 + BKV;
ATTN_UNROLL
            for (int i = 0; i < MI; ++i)
ATTN_UNROLL
                for (int j = 0; j < NJ; ++j)
ATTN_UNROLL
                    for (int e = 0; e < 4; ++e) {
                        float x = s[i][j][e];
                        x = capped_ ? cap2 * tanh(x * sl2) : x * sl2;
                        if (!full) {
                            const int kj = t0 + j * 8 + 2 * t + (e & 1);
                            x = kj >= rlo[i][e >> 1] && kj < rhi[i][e >> 1] ? x : -INFINITY;
                        }
                        s[i][j][e] = x;
                    }
            /* online softmax: new row max, rescale the sums and outputs, P = 2^(s - max) */
ATTN_UNROLL
            for (int i = 0; i < MI; ++i)
ATTN_UNROLL
                for (int hh = 0; hh < 2; ++hh) {
                    float mx = m[i][hh];
ATTN_UNROLL
                    for (int j = 0; j < NJ; ++j) mx = fmax(mx, fmax(s[i][j][2 * hh], s[i][j][2 * hh + 1]));
                    mx = fmax(mx, attn_shfl_xor(mx, 1));
                    mx = fmax(mx, attn_shfl_xor(mx, 2));
                    const float base = mx == -INFINITY ? 0.0f : mx;
                    const float corr = attn_exp2(m[i][hh] - base);   /* old max -inf: 0 (nothing summed yet) */
                    m[i][hh] = mx;
                    float ls = l[i][hh] * corr;
ATTN_UNROLL
                    for (int n = 0; n < ND; ++n) {
                        acc[i][n][2 * hh] *= corr;
                        acc[i][n][2 * hh + 1] *= corr;
                    }
ATTN_UNROLL
                    for (int j = 0; j < NJ; ++j) {
                        const float p0 = attn_exp2(s[i][j][2 * hh] - base), p1 = attn_exp2(s[i][j][2 * hh + 1] - base);
                        s[i][j][2 * hh] = p0;
                        s[i][j][2 * hh + 1] = p1;
                        ls += p0 + p1;
                    }
                    l[i][hh] = ls;
                }
            /* O += P V: two 8-key fragments of S are the A fragment of a 16-key step */
ATTN_UNROLL
            for (int kk = 0; kk < KJ; ++kk) {
                uint pa[MI][4];
ATTN_UNROLL
                for (int i = 0; i < MI; ++i) {
                    pa[i][0] = attn_pack(s[i][2 * kk][0], s[i][2 * kk][1]);
                    pa[i][1] = attn_pack(s[i][2 * kk][2], s[i][2 * kk][3]);
                    pa[i][2] = attn_pack(s[i][2 * kk + 1][0], s[i][2 * kk + 1][1]);
                    pa[i][3] = attn_pack(s[i][2 * kk + 1][2], s[i][2 * kk + 1][3]);
                }
ATTN_UNROLL
                for (int n = 0; n < ND; n += 2) {
                    uint r4[4];
                    ldsm4_t(r4, vb + 2u * (uint)((kk * 16 + lr + (lj & 1) * 8) * RS + n * 8 + (lj >> 1) * 8));
ATTN_UNROLL
                    for (int i = 0; i < MI; ++i) {
                        mma16816(acc[i][n], pa[i], r4[0], r4[1]);
                        mma16816(acc[i][n + 1], pa[i], r4[2], r4[3]);
                    }
                }
            }
        }
        rs = rs + 1 == STAGES ? 0 : rs + 1;
    }
    CP_ASYNC_WAIT(0);   /* (no copy outlives the group) */

    /* o = acc / sum (the row's sum: its 4 lanes' parts), lse = max * ln 2 + log(sum) */
ATTN_UNROLL
    for (int i = 0; i < MI; ++i)
ATTN_UNROLL
        for (int hh = 0; hh < 2; ++hh) {
            float ls = l[i][hh];
            ls += attn_shfl_xor(ls, 1);
            ls += attn_shfl_xor(ls, 2);
            const int r = qr0 + wq0 + i * 16 + g + 8 * hh;
            if (r < lq) {
                const float inv = ls > 0.0f ? 1.0f / ls : 0.0f;
                __global ushort* orow = (__global ushort*)o + ((long)(q0 + r) * heads + h) * HD + 2 * t;
ATTN_UNROLL
                for (int n = 0; n < ND; ++n)
                    *(__global uint*)(orow + n * 8) = attn_pack(acc[i][n][2 * hh] * inv, acc[i][n][2 * hh + 1] * inv);
                if (want_lse && t == 0) {
                    const long at = total_q < 0 ? ((long)b * heads + h) * sq + r : (long)h * total_q + q0 + r;
                    lse[at] = ls > 0.0f ? m[i][hh] * FA_LN2 + log(ls) : -INFINITY;
                }
            }
        }
}
#else /* the portable path */
static inline ACC capped(ACC s, float softcap)
{
    return softcap > 0.0f ? (ACC)softcap * tanh(s / (ACC)softcap) : s;
}

__kernel ISTHMUS_LOCAL_SIZE(BQ, 1, 1)
void attention(const int sq, const int sk, const int heads, const int kv_heads,
               const float scale, const int causal, const int window, const float softcap,
               __global const int* cu_q, __global const int* cu_k, const int batch, const int total_q,
               __global const T* q, __global const T* k, __global const T* v, __global T* o,
               __global float* lse, const int want_lse)
{
    __local ACC ks[BKT * HD];
    __local ACC vs[BKT * HD];
    const int lid = (int)get_local_id(0);
    const int h = (int)get_group_id(1);
    const int hk = h / (heads / kv_heads);
    int g = (int)get_group_id(0);
    int b, lq, lk, q0, k0;
    if (total_q < 0) {   /* dense */
        const int tiles = (sq + BQ - 1) / BQ;
        b = g / tiles;
        g -= b * tiles;
        lq = sq; lk = sk; q0 = b * sq; k0 = b * sk;
    } else {             /* variable lengths: the g-th tile over all sequences */
        for (b = 0; b < batch; ++b) {
            const int n = (cu_q[b + 1] - cu_q[b] + BQ - 1) / BQ;
            if (g < n) break;
            g -= n;
        }
        if (b == batch) return;   /* past the last tile: the whole group (before any barrier) */
        q0 = cu_q[b]; lq = cu_q[b + 1] - q0;
        k0 = cu_k[b]; lk = cu_k[b + 1] - k0;
    }
    const int i = g * BQ + lid;              /* this item's query row in its sequence */
    const int last = min(lq, g * BQ + BQ) - 1;
    /* the keys the tile's rows see: from the first row's start to the last row's end (both ends
     * grow with the row); and this row's own range */
    int tlo, thi, lo, hi;
    visible(g * BQ, lq, lk, causal, window, &tlo, &hi);
    visible(last, lq, lk, causal, window, &lo, &thi);
    visible(min(i, last), lq, lk, causal, window, &lo, &hi);
    tlo = tlo / BKT * BKT;

    const long qoff = ((long)(q0 + min(i, last)) * heads + h) * HD;
    ACC qr[HD], acc[HD];
    for (int d = 0; d < HD; ++d) {
        qr[d] = LOAD(q, qoff + d) * (ACC)scale;
        acc[d] = (ACC)0;
    }
    ACC m = -INFINITY, l = (ACC)0;
    const long kstride = (long)kv_heads * HD;
    for (int t0 = tlo; t0 < thi; t0 += BKT) {
        /* the tile's K and V rows into local memory (rows past the sequence: zeros) */
        for (int e = lid; e < BKT * HD; e += BQ) {
            const int j = t0 + e / HD, d = e % HD;
            const long at = (long)(k0 + j) * kstride + (long)hk * HD + d;
            ks[e] = j < lk ? LOAD(k, at) : (ACC)0;
            vs[e] = j < lk ? LOAD(v, at) : (ACC)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i < lq && t0 < hi && t0 + BKT > lo) {
            ACC s[BKT];
            ACC mt = m;
            for (int j = 0; j < BKT; ++j) {
                const int kj = t0 + j;
                ACC dot = (ACC)0;
                for (int d = 0; d < HD; ++d) dot += qr[d] * ks[j * HD + d];
                s[j] = (kj >= lo && kj < hi) ? capped(dot, softcap) : -INFINITY;
                mt = s[j] > mt ? s[j] : mt;
            }
            if (mt != -INFINITY) {   /* some key of the tile is seen */
                const ACC corr = exp(m - mt);   /* m = -inf: 0 (acc and l are 0) */
                l *= corr;
                for (int d = 0; d < HD; ++d) acc[d] *= corr;
                for (int j = 0; j < BKT; ++j) {
                    const ACC p = exp(s[j] - mt);
                    l += p;
                    for (int d = 0; d < HD; ++d) acc[d] += p * vs[j * HD + d];
                }
                m = mt;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i >= lq) return;
    const ACC inv = l > (ACC)0 ? (ACC)1 / l : (ACC)0;
    const long ooff = ((long)(q0 + i) * heads + h) * HD;
    for (int d = 0; d < HD; ++d) STORE(o, ooff + d, acc[d] * inv);
    if (want_lse) {
        const long at = total_q < 0 ? ((long)b * heads + h) * sq + i : (long)h * total_q + q0 + i;
        lse[at] = l > (ACC)0 ? (float)(m + log(l)) : -INFINITY;
    }
}
#endif /* MMA_PTX || MMA_EMU */
