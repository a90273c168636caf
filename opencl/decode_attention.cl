/* isthmus: decode_attention.cl -- attention of a few new tokens over a KV cache (flash decoding),
 * and the append of new keys and values into the cache
 *
 * Kernels:
 *   __kernel void decode_partial(const int n, const int heads, const int kv_heads, const int max_pages,
 *       const int page_size, const int num_pages, const int paged, const float scale,
 *       __global const int* lengths, __global const int* table, __global const T* q,
 *       __global const T* kc, __global const T* vc, __global float* part)
 *   __kernel void decode_combine(const int rows, __global const float* part, __global T* o,
 *       __global float* lse, const int want_lse)
 *   __kernel void kv_append(const long total, const int n, const int kv_heads, const int max_pages,
 *       const int page_size, const int num_pages, const int paged, __global const int* positions,
 *       __global const int* table, __global const T* k_new, __global const T* v_new,
 *       __global T* kc, __global T* vc)
 *
 * Caches: paged (paged = 1): kc, vc are (num_pages, page_size, kv_heads, HD), sequence b's key p
 * lives in page table[b * max_pages + p / page_size], slot p % page_size (vLLM's and FlashInfer's
 * layout); contiguous (paged = 0): (batch, max_len, kv_heads, HD), the same with page_size =
 * max_len, max_pages = 1 and sequence b's page b (table unused).  A page number outside
 * [0, num_pages) holds nothing (its keys are skipped, appends to it dropped); lengths and positions
 * are clamped to the capacity max_pages * page_size, so no index leaves the buffers.
 *
 * decode_partial: q (batch, n, heads, HD), n new tokens per sequence, whose keys (already appended)
 * are the last n of the sequence's lengths[b] keys: token t sees keys p <= lengths[b] - n + t.
 * Query heads h = hk*G .. hk*G + G-1 (G = heads / kv_heads) read kv head hk.  A work-group takes
 * RB of the n*G rows (token-major) of one (sequence, kv head) and one of SPLITS chunks of its keys
 * (the split: flash decoding), so the cache is read once per group of heads sharing it.  Per tile of
 * WG keys: K rows into local memory (coalesced), each item scores its key against the RB rows,
 * V rows into local memory, online softmax update per row, each item accumulating its share of the
 * RB x HD outputs.  It writes each row's normalized partial output and its log-sum-exp to
 *   part[((b*n + t)*heads + h)*SPLITS + split][0 .. HD]  (HD + 1 floats: o, then lse; -inf: empty)
 * decode_combine: a work-group per row merges its SPLITS partials (weights exp(lse_s - max)) into
 * o (rows x HD, q's layout) and, when want_lse, lse[row] (natural log; -inf for a row that sees no
 * key, whose output is 0).
 * kv_append: element e of k_new/v_new (batch, n, kv_heads, HD) goes to key positions[b] + t of
 * sequence b; positions past the capacity or on a page outside the pool are dropped.
 *
 * Tunables (-D): WG (keys per tile = work-group size), RB (rows per group), SPLITS (chunks of
 *   the keys); HD (head dim, per build).  Declared in python/isthmus/ops/specs/decode_attention.py.
 * Launch: decode_partial (3-D) local (WG,1,1), global (SPLITS*WG, kv_heads*ceil(n*G/RB), batch);
 *   decode_combine local (WG,1,1), global (rows*WG,);  kv_append local (WG,), global (ceil(total/WG)*WG,).
 */
#ifndef MMA_PTX
#  define MMA_PTX 0
#endif
#ifndef MMA_EMU
#  define MMA_EMU 0
#endif
#if !defined(WG) || !defined(RB) || !defined(SPLITS) || !defined(HD)
#  error "decode_attention.cl: build it through its op, which passes every tunable (-D)"
#endif

#define HDP (HD + 1)                    /* local rows padded against bank conflicts */
#define PAIRS ((RB * HD + WG - 1) / WG) /* outputs (row, d) an item accumulates */

/* the cache row of sequence b's key p, or -1 when its page is outside the pool */
static inline long cache_row(__global const int* table, int paged, int b, int p, int max_pages, int page_size,
                             int num_pages)
{
    const int page = paged ? table[(long)b * max_pages + p / page_size] : b;
    return page >= 0 && page < num_pages ? (long)page * page_size + p % page_size : -1L;
}

#if MMA_PTX || MMA_EMU
/* ---- the tensor-core path of decode_partial (NVIDIA: inline PTX from mma.h) ----
 * A work-group is one warp: 16 of the n*G rows of one (sequence, kv head) (an m16 block: a GQA
 * group of up to 16 query heads in one), one of SPLITS chunks of its keys.  Q's block comes into
 * local memory once and its A fragments stay in registers; K and V tiles of BKV keys stream through
 * a ring of STAGES stages with cp.async (16-byte copies; the cache row of each key looked up once
 * per tile into local memory: paged or not, the same loop), STAGES-1 tiles in flight; per tile
 * S = Q K^T and O += P V with mma.sync m16n8k16 and the online softmax in registers, as
 * attention.cl's tensor-core path.  Writes part[] as the portable path does (decode_combine). */
#include "attn_mma.h"
#define ATTN_EMU_SMEM dec_smem
#if !defined(BKV) || !defined(STAGES) || HD % 16 != 0 || BKV % 16 != 0 || BKV > 64 || STAGES < 2
#  error "decode_attention.cl: the tensor-core path needs BKV (16..64, a multiple of 16), STAGES >= 2, HD a multiple of 16"
#endif
#ifndef DYN_SMEM
#  define DYN_SMEM 0
#endif
#define DRS (HD + 8)              /* local row stride (elements): 16 bytes of padding */
#define DQ_ELEMS (16 * DRS)
#define DKV_ELEMS (BKV * DRS)
#define DSTAGE_ELEMS (2 * DKV_ELEMS)
#define SMEM_ELEMS (DQ_ELEMS + STAGES * DSTAGE_ELEMS)
#define DKD (HD / 16)
#define DNJ (BKV / 8)
#define DND (HD / 8)
#define DKJ (BKV / 16)
#define DCR (HD / 8)
#define DLOG2E 1.4426950408889634f
#define DLN2 0.6931471805599453f
/* keys t0 .. t0+BKV-1 into stage st: their cache rows (-1: none) into rows_[st], then K and V */
#define DLOAD(st, t0)                                                                                \
    do {                                                                                             \
        for (int j_ = lane; j_ < BKV; j_ += 32) {                                                    \
            const int p_ = (t0) + j_;                                                                \
            rows_[(st) * BKV + j_] = p_ < c1 ? (int)cache_row(table, paged, b, p_, max_pages, page_size, num_pages) : -1; \
        }                                                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                \
        for (int c_ = lane; c_ < BKV * DCR; c_ += 32) {                                              \
            const int r_ = c_ / DCR, row_ = rows_[(st) * BKV + r_];                                  \
            const long off_ = (long)max(row_, 0) * kstride + (c_ % DCR) * 8;                         \
            const uint d_ = sbase + 2u * (uint)(DQ_ELEMS + (st) * DSTAGE_ELEMS + r_ * DRS + (c_ % DCR) * 8); \
            cp_async16(d_, kp + off_, row_ >= 0);                                                    \
            cp_async16(d_ + 2u * DKV_ELEMS, vp + off_, row_ >= 0);                                   \
        }                                                                                            \
    } while (0)

__kernel ISTHMUS_LOCAL_SIZE(32, 1, 1)
void decode_partial(const int n, const int heads, const int kv_heads, const int max_pages,
                    const int page_size, const int num_pages, const int paged, const float scale,
                    __global const int* lengths, __global const int* table, __global const T* q,
                    __global const T* kc, __global const T* vc, __global float* part)
{
#if DYN_SMEM
    extern __shared__ __align__(16) ushort dec_smem[];
#else
    __local ushort dec_smem[SMEM_ELEMS] ISTHMUS_ALIGN(128);
#endif
    ATTN_EMU_DECL;
    __local int rows_[STAGES * BKV];
    const int lane = (int)get_local_id(0);
    const int g = lane >> 2, t = lane & 3, lj = lane >> 3, lr = lane & 7;
    const int split = (int)get_group_id(0);
    const int G = heads / kv_heads, R = n * G;
    const int blocks = (R + 15) / 16;
    const int hk = (int)get_group_id(1) / blocks, r0 = (int)get_group_id(1) % blocks * 16;
    const int b = (int)get_group_id(2);
    const int cap = max_pages * page_size;
    const int len = min(max(lengths[b], 0), cap);
    const int chunk = ((len + SPLITS - 1) / SPLITS + BKV - 1) / BKV * BKV;
    const int c0 = min(len, split * chunk), c1 = min(len, c0 + chunk);
    const int ntiles = (c1 - c0 + BKV - 1) / BKV;
    const long kstride = (long)kv_heads * HD;
    const uint sbase = smem_addr(dec_smem);
    __global const ushort* kp = (__global const ushort*)kc + (long)hk * HD;
    __global const ushort* vp = (__global const ushort*)vc + (long)hk * HD;

    /* Q's 16 rows (token-major: row r is token r / G, head hk*G + r % G; rows past R: zeros) */
    for (int c = lane; c < 16 * DCR; c += 32) {
        const int r = r0 + c / DCR, ok = r < R;
        const int rr = ok ? r : 0;
        __global const ushort* src = (__global const ushort*)q
            + ((long)(b * n + rr / G) * heads + hk * G + rr % G) * HD + (c % DCR) * 8;
        cp_async16(sbase + 2u * (uint)((c / DCR) * DRS + (c % DCR) * 8), src, ok);
    }
    CP_ASYNC_COMMIT();
ATTN_UNROLL
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) DLOAD(s, c0 + s * BKV);
        CP_ASYNC_COMMIT();
    }
    /* this lane's rows g, g + 8: the last key each sees (its token's) */
    int last[2];
    float m[2], l[2], acc[DND][4];
ATTN_UNROLL
    for (int hh = 0; hh < 2; ++hh) {
        const int r = r0 + g + 8 * hh;
        last[hh] = r < R ? len - n + r / G : -1;
        m[hh] = -INFINITY;
        l[hh] = 0.0f;
    }
ATTN_UNROLL
    for (int nn = 0; nn < DND; ++nn)
ATTN_UNROLL
        for (int e = 0; e < 4; ++e) acc[nn][e] = 0.0f;
    const float sl2 = scale * DLOG2E;
    const int first_last = len - n;   /* the last key every row sees */
    uint qf[DKD][4];

    int rs = 0, ws = STAGES - 1;
    for (int it = 0; it < ntiles; ++it) {
        const int t0 = c0 + it * BKV;
        CP_ASYNC_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (it == 0) {
ATTN_UNROLL
            for (int kk = 0; kk < DKD; ++kk)
                ldsm4(qf[kk], sbase + 2u * (uint)((lr + (lj & 1) * 8) * DRS + kk * 16 + (lj >> 1) * 8));
        }
        /* whether every key of the tile is there and seen by every row (read before the refill
         * below rewrites the other stages' rows) */
        int seen_all = t0 + BKV <= c1 && t0 + BKV - 1 <= first_last;
        for (int j = lane; j < BKV; j += 32) seen_all &= rows_[rs * BKV + j] >= 0;
        const int full = attn_all(seen_all);
        uint vmask = 0u;   /* bit j: key t0 + j is in the cache */
        if (!full)
            for (int j = 0; j < min(BKV, 32); ++j) vmask |= (rows_[rs * BKV + j] >= 0 ? 1u : 0u) << j;
        uint vmask_hi = 0u;   /* keys t0 + 32 .. (BKV 64) */
#if BKV > 32
        if (!full)
            for (int j = 32; j < BKV; ++j) vmask_hi |= (rows_[rs * BKV + j] >= 0 ? 1u : 0u) << (j - 32);
#endif
        {
            const int nk = it + STAGES - 1;
            if (nk < ntiles) DLOAD(ws, c0 + nk * BKV);
            CP_ASYNC_COMMIT();
            ws = ws + 1 == STAGES ? 0 : ws + 1;
        }
        const uint kb = sbase + 2u * (uint)(DQ_ELEMS + rs * DSTAGE_ELEMS);
        const uint vb = kb + 2u * (uint)DKV_ELEMS;
        float s[DNJ][4];
ATTN_UNROLL
        for (int j = 0; j < DNJ; ++j)
ATTN_UNROLL
            for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
ATTN_UNROLL
        for (int kk = 0; kk < DKD; ++kk)
ATTN_UNROLL
            for (int j = 0; j < DNJ; j += 2) {
                uint r4[4];
                ldsm4(r4, kb + 2u * (uint)((j * 8 + lr + (lj >> 1) * 8) * DRS + kk * 16 + (lj & 1) * 8));
                mma16816(s[j], qf[kk], r4[0], r4[1]);
                mma16816(s[j + 1], qf[kk], r4[2], r4[3]);
            }
ATTN_UNROLL
        for (int j = 0; j < DNJ; ++j)
ATTN_UNROLL
            for (int e = 0; e < 4; ++e) {
                float x = s[j][e] * sl2;
                if (!full) {
                    const int jj = j * 8 + 2 * t + (e & 1), p = t0 + jj;
                    const int there = jj < 32 ? (int)((vmask >> jj) & 1u) : (int)((vmask_hi >> (jj - 32)) & 1u);
                    x = p < c1 && p <= last[e >> 1] && there ? x : -INFINITY;
                }
                s[j][e] = x;
            }
ATTN_UNROLL
        for (int hh = 0; hh < 2; ++hh) {
            float mx = m[hh];
ATTN_UNROLL
            for (int j = 0; j < DNJ; ++j) mx = fmax(mx, fmax(s[j][2 * hh], s[j][2 * hh + 1]));
            mx = fmax(mx, attn_shfl_xor(mx, 1));
            mx = fmax(mx, attn_shfl_xor(mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx;
            const float corr = attn_exp2(m[hh] - base);
            m[hh] = mx;
            float ls = l[hh] * corr;
ATTN_UNROLL
            for (int nn = 0; nn < DND; ++nn) {
                acc[nn][2 * hh] *= corr;
                acc[nn][2 * hh + 1] *= corr;
            }
ATTN_UNROLL
            for (int j = 0; j < DNJ; ++j) {
                const float p0 = attn_exp2(s[j][2 * hh] - base), p1 = attn_exp2(s[j][2 * hh + 1] - base);
                s[j][2 * hh] = p0;
                s[j][2 * hh + 1] = p1;
                ls += p0 + p1;
            }
            l[hh] = ls;
        }
ATTN_UNROLL
        for (int kk = 0; kk < DKJ; ++kk) {
            uint pa[4];
            pa[0] = attn_pack(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = attn_pack(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = attn_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = attn_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
ATTN_UNROLL
            for (int nn = 0; nn < DND; nn += 2) {
                uint r4[4];
                ldsm4_t(r4, vb + 2u * (uint)((kk * 16 + lr + (lj & 1) * 8) * DRS + nn * 8 + (lj >> 1) * 8));
                mma16816(acc[nn], pa, r4[0], r4[1]);
                mma16816(acc[nn + 1], pa, r4[2], r4[3]);
            }
        }
        rs = rs + 1 == STAGES ? 0 : rs + 1;
    }
    CP_ASYNC_WAIT(0);
ATTN_UNROLL
    for (int hh = 0; hh < 2; ++hh) {
        float ls = l[hh];
        ls += attn_shfl_xor(ls, 1);
        ls += attn_shfl_xor(ls, 2);
        const int r = r0 + g + 8 * hh;
        if (r < R) {
            const int tok = r / G, h = hk * G + r % G;
            __global float* at = part + (((long)(b * n + tok) * heads + h) * SPLITS + split) * (HD + 1);
            const float inv = ls > 0.0f ? 1.0f / ls : 0.0f;
ATTN_UNROLL
            for (int nn = 0; nn < DND; ++nn) {
                at[nn * 8 + 2 * t] = acc[nn][2 * hh] * inv;
                at[nn * 8 + 2 * t + 1] = acc[nn][2 * hh + 1] * inv;
            }
            if (t == 0) at[HD] = ls > 0.0f ? m[hh] * DLN2 + log(ls) : -INFINITY;
        }
    }
}
#else /* the portable path */
__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void decode_partial(const int n, const int heads, const int kv_heads, const int max_pages,
                    const int page_size, const int num_pages, const int paged, const float scale,
                    __global const int* lengths, __global const int* table, __global const T* q,
                    __global const T* kc, __global const T* vc, __global float* part)
{
    __local ACC qs[RB * HD];
    __local ACC ss[RB * WG];
    __local ACC tile[WG * HDP];
    __local ACC mrow[RB], lrow[RB], crow[RB];
    const int lid = (int)get_local_id(0);
    const int split = (int)get_group_id(0);
    const int G = heads / kv_heads, R = n * G;
    const int blocks = (R + RB - 1) / RB;
    const int hk = (int)get_group_id(1) / blocks, r0 = (int)get_group_id(1) % blocks * RB;
    const int b = (int)get_group_id(2);
    const int cap = max_pages * page_size;
    const int len = min(max(lengths[b], 0), cap);
    const int chunk = ((len + SPLITS - 1) / SPLITS + WG - 1) / WG * WG;
    const int c0 = min(len, split * chunk), c1 = min(len, c0 + chunk);
    const long kstride = (long)kv_heads * HD;

    for (int e = lid; e < RB * HD; e += WG) {
        const int r = r0 + e / HD;
        const int t = r / G, h = hk * G + r % G;
        qs[e] = r < R ? LOAD(q, ((long)(b * n + t) * heads + h) * HD + e % HD) * (ACC)scale : (ACC)0;
    }
    if (lid < RB) { mrow[lid] = -INFINITY; lrow[lid] = (ACC)0; }
    ACC acc[PAIRS];
    for (int i = 0; i < PAIRS; ++i) acc[i] = (ACC)0;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int t0 = c0; t0 < c1; t0 += WG) {
        /* K rows of the tile (coalesced: consecutive items, consecutive elements of a row) */
        for (int e = lid; e < WG * HD; e += WG) {
            const int p = t0 + e / HD;
            const long row = p < c1 ? cache_row(table, paged, b, p, max_pages, page_size, num_pages) : -1L;
            tile[e / HD * HDP + e % HD] = row >= 0 ? LOAD(kc, row * kstride + (long)hk * HD + e % HD) : (ACC)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        {
            const int p = t0 + lid;
            const int seen = p < c1 && cache_row(table, paged, b, p, max_pages, page_size, num_pages) >= 0;
            for (int r = 0; r < RB; ++r) {
                const int t = (r0 + r) / G;
                ACC dot = (ACC)0;
                for (int d = 0; d < HD; ++d) dot += qs[r * HD + d] * tile[lid * HDP + d];
                ss[r * WG + lid] = seen && r0 + r < R && p <= len - n + t ? dot : -INFINITY;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < WG * HD; e += WG) {   /* V rows of the tile */
            const int p = t0 + e / HD;
            const long row = p < c1 ? cache_row(table, paged, b, p, max_pages, page_size, num_pages) : -1L;
            tile[e / HD * HDP + e % HD] = row >= 0 ? LOAD(vc, row * kstride + (long)hk * HD + e % HD) : (ACC)0;
        }
        if (lid < RB) {   /* the row's new max and the factor its sums are rescaled by */
            ACC mt = mrow[lid];
            for (int j = 0; j < WG; ++j) mt = ss[lid * WG + j] > mt ? ss[lid * WG + j] : mt;
            crow[lid] = mt == -INFINITY ? (ACC)1 : exp(mrow[lid] - mt);
            mrow[lid] = mt;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = 0; r < RB; ++r) {
            const ACC s = ss[r * WG + lid];
            ss[r * WG + lid] = s == -INFINITY ? (ACC)0 : exp(s - mrow[r]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < RB) {
            ACC l = lrow[lid] * crow[lid];
            for (int j = 0; j < WG; ++j) l += ss[lid * WG + j];
            lrow[lid] = l;
        }
        for (int i = 0; i < PAIRS; ++i) {
            const int e = lid + i * WG;
            if (e < RB * HD) {
                const int r = e / HD, d = e % HD;
                ACC a = acc[i] * crow[r];
                for (int j = 0; j < WG; ++j) a += ss[r * WG + j] * tile[j * HDP + d];
                acc[i] = a;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < PAIRS; ++i) {
        const int e = lid + i * WG;
        const int r = r0 + e / HD;
        if (e < RB * HD && r < R) {
            const int t = r / G, h = hk * G + r % G;
            const ACC l = lrow[e / HD];
            __global float* at = part + (((long)(b * n + t) * heads + h) * SPLITS + split) * (HD + 1);
            at[e % HD] = l > (ACC)0 ? (float)(acc[i] / l) : 0.0f;
            if (e % HD == 0) at[HD] = l > (ACC)0 ? (float)(mrow[e / HD] + log(l)) : -INFINITY;
        }
    }
}

#endif /* MMA_PTX || MMA_EMU */

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void decode_combine(const int rows, __global const float* part, __global T* o, __global float* lse,
                    const int want_lse)
{
    const int row = (int)get_group_id(0);
    __global const float* p = part + (long)row * SPLITS * (HD + 1);
    float m = -INFINITY;
    for (int s = 0; s < SPLITS; ++s) m = fmax(m, p[s * (HD + 1) + HD]);
    float w = 0.0f;
    for (int s = 0; s < SPLITS; ++s) w += m == -INFINITY ? 0.0f : exp(p[s * (HD + 1) + HD] - m);
    for (int d = (int)get_local_id(0); d < HD; d += WG) {
        float a = 0.0f;
        for (int s = 0; s < SPLITS; ++s)
            if (m != -INFINITY) a += exp(p[s * (HD + 1) + HD] - m) * p[s * (HD + 1) + d];
        STORE(o, (long)row * HD + d, w > 0.0f ? a / w : 0.0f);
    }
    if (want_lse && get_local_id(0) == 0) lse[row] = w > 0.0f ? m + log(w) : -INFINITY;
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void kv_append(const long total, const int n, const int kv_heads, const int max_pages, const int page_size,
               const int num_pages, const int paged, __global const int* positions, __global const int* table,
               __global const T* k_new, __global const T* v_new, __global T* kc, __global T* vc)
{
    const long e = (long)get_global_id(0);
    if (e >= total) return;
    const long per = (long)kv_heads * HD;
    const long token = e / per;            /* b * n + t */
    const int b = (int)(token / n), t = (int)(token % n);
    const long pos = (long)positions[b] + t;
    if (pos < 0 || pos >= (long)max_pages * page_size) return;
    const long row = cache_row(table, paged, b, (int)pos, max_pages, page_size, num_pages);
    if (row < 0) return;
    /* through ACC: OpenCL C reads and writes half only through vload_half/vstore_half (exact both ways) */
    STORE(kc, row * per + e % per, LOAD(k_new, e));
    STORE(vc, row * per + e % per, LOAD(v_new, e));
}
