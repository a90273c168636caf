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
 * The tile loop is the place a tensor-core path goes (MMA_PTX, as gemm_mma.cl: S = Q K^T and
 * O += P V as m16n8k16 fragments per warp); this file holds the portable path, which every device
 * runs.
 *
 * Tunables (-D): BQ (query rows per group = work-group size), BKT (keys per tile); HD (head dim,
 *   fixed per build, 1..256).  Declared in python/isthmus/ops/specs/attention.py.
 * Launch (2-D): local = (BQ, 1), global = (tiles * BQ, heads).
 */
#if !defined(BQ) || !defined(BKT) || !defined(HD)
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
