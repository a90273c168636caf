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
