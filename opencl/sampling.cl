/* isthmus: sampling.cl -- argmax, top-k and sampling over the rows of a 2-D buffer
 *
 * x: rows x cols, row-major (a model's logits: rows of vocabulary width).  Indices are int (a
 * vocabulary is far below 2^31).  Order: every value is compared through its key, a uint whose
 * order is the floats' (larger key, larger value), with NaN the largest (any NaN: 0xffffffff, as
 * torch's argmax/topk treat NaN as the maximum) and -0 equal to +0; among equal keys the lower
 * index comes first.  Key 0 never comes from a value (-inf's key is 0x007fffff): it marks an empty
 * slot.
 *
 * Kernels (1-D, local = (WG,)):
 *   argmax_partial(rows, cols, x, part, out)     global = (rows * SPLIT * WG,)
 *       group g takes chunk g % SPLIT of row g / SPLIT (chunks of ceil(cols / SPLIT)); its best
 *       (key << 32 | ~index) goes to part[g] (SPLIT > 1), or its index to out[row] (SPLIT = 1).
 *   argmax_final(rows, part, out)                global = (ceil(rows / WG) * WG,): an item per row
 *       merges the row's SPLIT partials.
 *   topk_chunk(rows, cols, k, final_out, x, ws, values, indices)   global = (rows * SPLIT * WG,)
 *       group g selects the k largest (key, index) of its chunk (radix select on the keys: four
 *       passes of 8 bits with a local histogram, then a gather, and ties at the threshold taken in
 *       index order), sorts them (bitonic, in local memory) and writes them: SPLIT > 1 to the
 *       partials of ws; SPLIT = 1 to values/indices (final_out = 1: values read back from x) or
 *       to ws's candidates (final_out = 0: keys, for sample_rows).
 *   topk_merge(rows, cols, k, final_out, x, ws, values, indices)   global = (rows * WG,)
 *       the same selection over a row's SPLIT * k partials (written as above).
 *       ws (uint words): partials [rows*SPLIT*k keys][rows*SPLIT*k indices] (SPLIT > 1 only),
 *       then candidates [rows*k keys][rows*k indices].  k <= KMAX (a power of two, -D).
 *   sample_rows(rows, cols, kc, norm_all, temperature, top_p, seed, offset, per_row, offsets, x, ws,
 *               cand_at, out)                    global = (rows * WG,): a group per row.
 *       u = Philox4x32-10 (key = seed, counter = (offset or offsets[row], row, 0)), first word,
 *       as (w >> 8) * 2^-24 in [0, 1).  The probabilities are exp(x / temperature - max)
 *       (unnormalized).  kc = 0: the whole row: each item holds a contiguous segment's (max, sum),
 *       the segments are summed in order, and the token is the first index whose running sum
 *       exceeds u * total.  kc > 0: the row's kc largest (sorted keys and indices at ws[cand_at..]),
 *       normalized over themselves (norm_all = 0, top-k) or over the whole row (norm_all = 1:
 *       top-p without top-k); the nucleus keeps the candidates whose preceding mass is below
 *       top_p (at least one: Hugging Face's rule); the token is drawn among the kept ones.
 *       temperature <= 0: greedy (the row's argmax, or its first candidate).
 * dtypes: float half bfloat16 (ACC float).
 * Tunables (-D): WG, SPLIT (work-groups per row of argmax and top-k); LAYOUT (0: as above, a
 *   group's items striding over its chunk; 1, CPUs only (OpenCL C vectors): argmax's items each
 *   scan a contiguous run in 16-wide vectors, sample_rows' segments are whole 16-vectors summed in
 *   vectors (max from the best key, then the exps), and top-k's selection is the group's first item
 *   keeping a heap of the k best, 16 keys at a time compared with its worst; the same chunks,
 *   partials and merge); KMAX (the largest k the build holds in local memory: set by the call,
 *   not tuned).  Declared in python/isthmus/ops/specs/sampling.py.
 */
#if !defined(WG) || !defined(SPLIT)
#  error "sampling.cl: build it through its op, which passes every tunable (-D)"
#endif
#ifndef KMAX
#  define KMAX 64   /* (the call sets it: 64, or 1024 for k > 64) */
#endif
#if (WG & (WG - 1)) != 0 || (KMAX & (KMAX - 1)) != 0
#  error "sampling.cl: WG and KMAX must be powers of two"
#endif

/* the order key of a value (see the header) */
static inline uint sampling_key(float f)
{
    const uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0xffffffffu;   /* NaN: the largest */
    if ((u & 0x7fffffffu) == 0u)
        return 0x80000000u;   /* -0 is +0 */
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* the value of a key (NaN for NaN's) */
static inline float sampling_value(uint k)
{
    if (k == 0xffffffffu)
        return as_float(0x7fc00000u);
    return as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* a __local pointer parameter (CUDA: a plain pointer; __shared__ is not part of a pointer type) */
#ifdef ISTHMUS_CUDA
#  define LOCAL_PTR
#else
#  define LOCAL_PTR __local
#endif

/* (key, index) as one 64-bit word ordered as the pair: larger key, then lower index */
#define PACK(key, i) (((ulong)(key) << 32) | (ulong)(~(uint)(i)))
#define UNPACK_INDEX(p) ((int)(~(uint)(p)))

#ifndef LAYOUT
#  define LAYOUT 0
#endif
#if LAYOUT == 1
/* ---- CPUs: contiguous runs in 16-wide OpenCL vectors (what the core's SIMD units take) ---- */
#if IS_HALF
#  define VLOAD16F(p, i) vload_half16(0, (p) + (i))
#elif IS_BF16
#  define VLOAD16F(p, i) as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
#else
#  define VLOAD16F(p, i) vload16(0, (p) + (i))
#endif

/* sampling_key on 16 lanes */
static inline uint16 sampling_key16(float16 f)
{
    const uint16 u = as_uint16(f), a = u & 0x7fffffffu;
    uint16 k = select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
    k = select(k, (uint16)0x80000000u, a == 0u);
    return select(k, (uint16)0xffffffffu, a > 0x7f800000u);
}

/* the best PACK(key, index) of xr[from..to) (0 when empty): lane-wise maxima of the keys (a lane
 * visits its indices in increasing order, so > keeps its lowest), then the lanes merged */
static inline ulong best_of_run(__global const T* xr, const int from, const int to)
{
    ulong best = 0;
    int i = from;
    if (to - from >= 16) {
        uint16 bk = (uint16)0u;
        int16 bi = (int16)0;
        const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        for (; i + 16 <= to; i += 16) {
            const uint16 k = sampling_key16(VLOAD16F(xr, i));
            const int16 gt = as_int16(k > bk);
            bk = select(bk, k, as_uint16(gt));
            bi = select(bi, lane + i, gt);
        }
        uint kk[16];
        int ii[16];
        vstore16(bk, 0, kk);
        vstore16(bi, 0, ii);
        for (int j = 0; j < 16; ++j) {
            const ulong v = kk[j] ? PACK(kk[j], ii[j]) : (ulong)0;
            best = v > best ? v : best;
        }
    }
    for (; i < to; ++i) {
        const ulong v = PACK(sampling_key(LOAD(xr, i)), i);
        best = v > best ? v : best;
    }
    return best;
}
#endif

/* ---- argmax ------------------------------------------------------------------------------ */
__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void argmax_partial(const int rows, const int cols, __global const T* x, __global ulong* part,
                    __global int* out)
{
    __local ulong red[WG];
    const int lid = (int)get_local_id(0);
    const int g = (int)get_group_id(0);
    const int row = g / SPLIT, p = g % SPLIT;
    const int chunk = (cols + SPLIT - 1) / SPLIT;
    const int start = p * chunk, end = min(cols, start + chunk);
    __global const T* xr = x + (long)row * cols;
#if LAYOUT == 1
    /* CPUs: the item's contiguous run of the group's chunk (runs of whole 16-vectors) */
    const int run = ((end - start + WG - 1) / WG + 15) / 16 * 16;
    const int from = min(end, start + lid * run);
    red[lid] = best_of_run(xr, from, min(end, from + run));
#else
    /* the item's best in float compares (a NaN beats any number; > keeps the item's lowest index:
     * it visits its indices in increasing order), packed once for the group's reduction */
    float bv = -INFINITY;
    int bi = -1;
    for (int i = start + lid; i < end; i += WG) {
        const float v = LOAD(xr, i);
        if (v > bv || (bi < 0) || ((as_uint(v) & 0x7fffffffu) > 0x7f800000u &&
                                   (as_uint(bv) & 0x7fffffffu) <= 0x7f800000u)) {
            bv = v;
            bi = i;
        }
    }
    red[lid] = bi < 0 ? (ulong)0 : PACK(sampling_key(bv), bi);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            const ulong o = red[lid + s];
            red[lid] = o > red[lid] ? o : red[lid];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
#if SPLIT > 1
        part[g] = red[0];
#else
        out[row] = UNPACK_INDEX(red[0]);
#endif
    }
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void argmax_final(const int rows, __global const ulong* part, __global int* out)
{
    const int row = (int)get_global_id(0);
    if (row >= rows)
        return;
    ulong best = 0;
    for (int p = 0; p < SPLIT; ++p) {
        const ulong v = part[(long)row * SPLIT + p];
        best = v > best ? v : best;
    }
    out[row] = UNPACK_INDEX(best);
}

/* ---- top-k --------------------------------------------------------------------------------- */
/* a before b: the larger key, then the lower index */
#define BEFORE(ka, ia, kb, ib) ((ka) > (kb) || ((ka) == (kb) && (ia) < (ib)))

typedef struct {
    uint hist[256];
    uint key[KMAX];
    int idx[KMAX];
    int flag[WG];
    uint prefix;
    int need, ties, count;
} topk_local;

/* element i (0 <= i < n) of the group's candidates: from x (mode 0: xr[start + i]) or from the
 * partials (mode 1: pk[i], pi[i]; key 0 is an empty slot) */
#define FETCH(i, key, index)                                             \
    if (mode == 0) {                                                     \
        key = sampling_key(LOAD(xr, start + (i)));                       \
        index = start + (i);                                             \
    } else {                                                             \
        key = pk[i];                                                     \
        index = pi[i];                                                   \
    }

#if LAYOUT == 0
/* the group's kk = min(k, real candidates) largest (key, index), sorted, into L->key/idx[0..kk);
 * returns kk (the same in every item) */
static inline int topk_select(volatile LOCAL_PTR topk_local* L, const int mode, __global const T* xr, const int start,
                              const int n, const int nreal, __global const uint* pk, __global const int* pi,
                              const int k)
{
    const int lid = (int)get_local_id(0);
    const int kk = min(k, nreal);
    uint key;
    int index;
    if (lid == 0) {
        L->prefix = 0u;
        L->need = kk;
        L->count = 0;
    }
    uint mask = 0u;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = lid; b < 256; b += WG)
            L->hist[b] = 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint prefix = L->prefix;
        for (int i = lid; i < n && kk > 0; i += WG) {
            FETCH(i, key, index)
            if (key != 0u && (key & mask) == prefix)
                atomic_inc(&L->hist[(key >> shift) & 255u]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0 && kk > 0) {
            int need = L->need, b = 255;
            for (; b > 0; --b) {
                const int c = (int)L->hist[b];
                if (c >= need)
                    break;
                need -= c;
            }
            L->need = need;
            L->ties = (int)L->hist[b];
            L->prefix = prefix | ((uint)b << shift);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        mask |= 0xffu << shift;
    }
    /* the threshold's key; need: how many of its ties are taken; ties: how many there are */
    const uint th = L->prefix;
    const int need = L->need, ties = L->ties;
    for (int i = lid; i < n && kk > 0; i += WG) {
        FETCH(i, key, index)
        if (key != 0u && (key > th || (key == th && ties == need))) {
            const int at = atomic_inc(&L->count);
            L->key[at] = key;
            L->idx[at] = index;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (kk > 0 && ties > need) {
        /* more ties than places: the lowest indices, in index order (candidates in index order of
         * equal keys: x's columns; the partials' chunks in order, each sorted) */
        for (int base = 0; base < n; base += WG) {
            const int i = base + lid;
            int f = 0;
            if (i < n && L->need > 0) {
                FETCH(i, key, index)
                f = key == th;
            }
            L->flag[lid] = f ? index + 1 : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {
                int left = L->need;
                for (int t = 0; t < WG && left > 0; ++t) {
                    if (L->flag[t]) {
                        const int at = L->count++;
                        L->key[at] = th;
                        L->idx[at] = L->flag[t] - 1;
                        --left;
                    }
                }
                L->need = left;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    /* bitonic sort of the kk selected, padded to a power of two with empty slots */
    int kp = 1;
    while (kp < kk)
        kp <<= 1;
    for (int t = kk + lid; t < kp; t += WG) {
        L->key[t] = 0u;
        L->idx[t] = INT_MAX;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int size = 2; size <= kp; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int t = lid; t < kp / 2; t += WG) {
                const int i = 2 * t - (t & (stride - 1));
                const int j = i + stride;
                const uint ka = L->key[i], kb = L->key[j];
                const int ia = L->idx[i], ib = L->idx[j];
                const int first = (i & size) == 0;   /* this pair ends in the row's order */
                if (first ? BEFORE(kb, ib, ka, ia) : BEFORE(ka, ia, kb, ib)) {
                    L->key[i] = kb;
                    L->key[j] = ka;
                    L->idx[i] = ib;
                    L->idx[j] = ia;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    return kk;
}

#endif

#if LAYOUT == 1
/* CPUs: the group's first item keeps the k best so far in a heap (L->key/idx[0..size), the worst
 * at the root: the smaller key, then the higher index); a candidate enters when it beats the
 * root.  Over x's columns (mode 0) 16 keys at a time are compared with the root's key first
 * (the columns come in increasing order, so only a strictly larger key can beat the root); a
 * random row lets few past that test once the heap is full.  At the end a heap sort leaves the
 * kk selected in order, best first.  Returns kk (the same in every item). */
#define WORSE(ka, ia, kb, ib) ((ka) < (kb) || ((ka) == (kb) && (ia) > (ib)))

static inline void heap_down(volatile LOCAL_PTR topk_local* L, int at, const int size)
{
    const uint key = L->key[at];
    const int index = L->idx[at];
    for (;;) {
        int c = 2 * at + 1;
        if (c >= size)
            break;
        if (c + 1 < size && WORSE(L->key[c + 1], L->idx[c + 1], L->key[c], L->idx[c]))
            ++c;
        if (!WORSE(L->key[c], L->idx[c], key, index))
            break;
        L->key[at] = L->key[c];
        L->idx[at] = L->idx[c];
        at = c;
    }
    L->key[at] = key;
    L->idx[at] = index;
}

/* (key, index) offered to a heap of size *size (at most k) */
static inline void heap_offer(volatile LOCAL_PTR topk_local* L, int* size, const int k, const uint key,
                              const int index)
{
    if (*size < k) {   /* filling: sift up */
        int at = (*size)++;
        while (at > 0) {
            const int up = (at - 1) / 2;
            if (!WORSE(key, index, L->key[up], L->idx[up]))
                break;
            L->key[at] = L->key[up];
            L->idx[at] = L->idx[up];
            at = up;
        }
        L->key[at] = key;
        L->idx[at] = index;
    } else if (WORSE(L->key[0], L->idx[0], key, index)) {
        L->key[0] = key;
        L->idx[0] = index;
        heap_down(L, 0, *size);
    }
}

static inline int topk_select(volatile LOCAL_PTR topk_local* L, const int mode, __global const T* xr, const int start,
                              const int n, const int nreal, __global const uint* pk, __global const int* pi,
                              const int k)
{
    if (get_local_id(0) == 0) {
        int size = 0, i = 0;
        if (mode == 0) {
            for (; i < n && size < k; ++i)
                heap_offer(L, &size, k, sampling_key(LOAD(xr, start + i)), start + i);
            if (size == k) {
                for (; i + 16 <= n; i += 16) {
                    const uint16 keys = sampling_key16(VLOAD16F(xr, start + i));
                    if (any(keys > (uint16)L->key[0])) {
                        uint kk[16];
                        vstore16(keys, 0, kk);
                        for (int j = 0; j < 16; ++j)
                            if (kk[j] > L->key[0]) {
                                L->key[0] = kk[j];
                                L->idx[0] = start + i + j;
                                heap_down(L, 0, size);
                            }
                    }
                }
            }
            for (; i < n; ++i)
                heap_offer(L, &size, k, sampling_key(LOAD(xr, start + i)), start + i);
        } else {
            for (; i < n; ++i)
                if (pk[i] != 0u)
                    heap_offer(L, &size, k, pk[i], pi[i]);
        }
        for (int e = size - 1; e > 0; --e) {   /* heap sort: the worst to the end, best first */
            const uint key = L->key[e];
            const int index = L->idx[e];
            L->key[e] = L->key[0];
            L->idx[e] = L->idx[0];
            L->key[0] = key;
            L->idx[0] = index;
            heap_down(L, 0, e);
        }
        L->need = size;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return L->need;
}
#endif

/* the group's sorted selection written out: dk/di (k slots, empty ones key 0), or values/indices */
static inline void topk_write(volatile LOCAL_PTR topk_local* L, const int kk, const int k, const int final_out,
                              __global const T* xr, __global uint* dk, __global int* di, __global T* values,
                              __global int* indices)
{
    const int lid = (int)get_local_id(0);
    if (final_out) {
        for (int t = lid; t < kk; t += WG) {
            const int i = L->idx[t];
#if IS_HALF   /* the value itself, its bits copied (-0, NaN payloads kept) */
            ((__global ushort*)values)[t] = ((__global const ushort*)xr)[i];
#else
            values[t] = xr[i];
#endif
            indices[t] = i;
        }
    } else {
        for (int t = lid; t < k; t += WG) {
            dk[t] = t < kk ? L->key[t] : 0u;
            di[t] = t < kk ? L->idx[t] : INT_MAX;
        }
    }
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void topk_chunk(const int rows, const int cols, const int k, const int final_out, __global const T* x,
                __global uint* ws, __global T* values, __global int* indices)
{
    __local topk_local L;
    const int g = (int)get_group_id(0);
    const int row = g / SPLIT, p = g % SPLIT;
    const int chunk = (cols + SPLIT - 1) / SPLIT;
    const int start = min(cols, p * chunk), n = min(cols, start + chunk) - start;
    __global const T* xr = x + (long)row * cols;
    const int kk = topk_select(&L, 0, xr, start, n, n, ws, (__global const int*)ws, k);
#if SPLIT > 1
    __global uint* dk = ws + (long)g * k;
    __global int* di = (__global int*)ws + (long)rows * SPLIT * k + (long)g * k;
    topk_write(&L, kk, k, 0, xr, dk, di, values, indices);
#else
    __global uint* dk = ws + (long)row * k;
    __global int* di = (__global int*)ws + (long)rows * k + (long)row * k;
    topk_write(&L, kk, k, final_out, xr, dk, di, values + (long)row * k, indices + (long)row * k);
#endif
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void topk_merge(const int rows, const int cols, const int k, const int final_out, __global const T* x,
                __global uint* ws, __global T* values, __global int* indices)
{
    __local topk_local L;
    const int row = (int)get_group_id(0);
    const int chunk = (cols + SPLIT - 1) / SPLIT;
    int nreal = 0;
    for (int p = 0; p < SPLIT; ++p)
        nreal += min(k, max(0, min(cols, (p + 1) * chunk) - p * chunk));
    __global const T* xr = x + (long)row * cols;
    const long parts = (long)rows * SPLIT * k;
    __global const uint* pk = ws + (long)row * SPLIT * k;
    __global const int* pi = (__global const int*)ws + parts + (long)row * SPLIT * k;
    const int kk = topk_select(&L, 1, xr, 0, SPLIT * k, nreal, pk, pi, k);
    __global uint* dk = ws + 2 * parts + (long)row * k;
    __global int* di = (__global int*)ws + 2 * parts + (long)rows * k + (long)row * k;
    topk_write(&L, kk, k, final_out, xr, dk, di, values + (long)row * k, indices + (long)row * k);
}

/* ---- sampling ------------------------------------------------------------------------------ */
/* hi and lo words of a * b, with 32-bit integer operations only (16-bit halves): the same on
 * every device and backend */
static inline uint philox_mulhilo(const uint a, const uint b, uint* lo)
{
    const uint al = a & 0xffffu, ah = a >> 16, bl = b & 0xffffu, bh = b >> 16;
    const uint ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    const uint mid = (ll >> 16) + (lh & 0xffffu) + (hl & 0xffffu);
    *lo = a * b;
    return hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
}

/* Philox4x32-10 (Salmon et al., 2011): the first word of the block at counter c under key k */
static inline uint philox_first(uint c0, uint c1, uint c2, uint c3, uint k0, uint k1)
{
    for (int r = 0; r < 10; ++r) {
        uint lo0, lo1;
        const uint hi0 = philox_mulhilo(0xD2511F53u, c0, &lo0);
        const uint hi1 = philox_mulhilo(0xCD9E8D57u, c2, &lo1);
        const uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void sample_rows(const int rows, const int cols, const int kc, const int norm_all, const float temperature,
                 const float top_p, const ulong seed, const long offset, const int per_row,
                 __global const long* offsets, __global const T* x, __global const uint* ws, const long cand_at,
                 __global int* out)
{
    __local float lm[WG], ls[WG];
    __local ulong lb[WG];
    __local int pick;
    __local float left;
    const int lid = (int)get_local_id(0);
    const int row = (int)get_group_id(0);
    __global const T* xr = x + (long)row * cols;
    const int greedy = !(temperature > 0.0f);
    const float inv = greedy ? 1.0f : 1.0f / temperature;
    /* each item: its segment's max, sum of exp(x * inv - max), and best (key, index) */
#if LAYOUT == 1
    const int seg = ((cols + WG - 1) / WG + 15) / 16 * 16;   /* (whole 16-vectors) */
#else
    const int seg = (cols + WG - 1) / WG;
#endif
    const int s0 = min(cols, lid * seg), s1 = min(cols, s0 + seg);
    const int need_row = kc == 0 || (norm_all && !greedy);
    float m = -INFINITY, s = 0.0f;
    ulong best = 0;
#if LAYOUT == 1
    /* CPUs: the best key in 16-wide vectors, the max from it (inv > 0 keeps the order), then the
     * sum of exps in 16-wide vectors (two passes over the cached run, no branch per value) */
    if (need_row) {
        best = best_of_run(xr, s0, s1);
        m = best ? sampling_value((uint)(best >> 32)) * inv : -INFINITY;
        if (m > -INFINITY) {
            int i = s0;
            float16 acc = (float16)0.0f;
            for (; i + 16 <= s1; i += 16)
                acc += exp(VLOAD16F(xr, i) * inv - m);
            float part[16];
            vstore16(acc, 0, part);
            for (int j = 0; j < 16; ++j)
                s += part[j];
            for (; i < s1; ++i)
                s += exp(LOAD(xr, i) * inv - m);
        }
    }
#else
    if (need_row) {
        for (int i = s0; i < s1; ++i) {
            const float v = LOAD(xr, i);
            const ulong b = PACK(sampling_key(v), i);
            best = b > best ? b : best;
            const float z = v * inv;
            if (z == -INFINITY) {
                /* nothing to add */
            } else if (z > m) {
                s = s * exp(m - z) + 1.0f;
                m = z;
            } else {
                s += exp(z - m);
            }
        }
    }
#endif
    lm[lid] = m;
    ls[lid] = s;
    lb[lid] = best;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        const ulong c = (ulong)(per_row ? offsets[row] : offset);
        const uint r = philox_first((uint)c, (uint)(c >> 32), (uint)row, 0u, (uint)seed, (uint)(seed >> 32));
        const float u = (float)(r >> 8) * (1.0f / 16777216.0f);
        /* the row's max, total and argmax, over the segments in order */
        float mx = -INFINITY;
        ulong bb = 0;
        for (int t = 0; t < WG; ++t) {
            mx = fmax(mx, lm[t]);
            bb = lb[t] > bb ? lb[t] : bb;
        }
        float total = 0.0f;
        if (mx > -INFINITY)
            for (int t = 0; t < WG; ++t)
                total += ls[t] * exp(lm[t] - mx);
        int token = -1;
        if (kc == 0) {
            if (greedy || !(mx > -INFINITY) || (uint)(bb >> 32) >= 0xff800000u) {
                token = UNPACK_INDEX(bb);   /* greedy; a row of -inf; a NaN or +inf: its argmax */
            } else {
                /* the segment where u * total falls (its item scans it, below); past the end by
                 * rounding: the last segment with mass, its last token */
                const float target = u * total;
                float acc = 0.0f, rest = -1.0f;
                int chosen = -1;
                for (int t = 0; t < WG; ++t) {
                    const float e = ls[t] * exp(lm[t] - mx);
                    if (e > 0.0f) {
                        chosen = t;
                        if (acc + e > target) {
                            rest = target - acc;
                            break;
                        }
                        acc += e;
                    }
                }
                lm[0] = mx;
                left = rest;
                /* no segment with mass: x / temperature overflowed float (a temperature so small
                 * that the draw's limit is the argmax): the argmax, never an unwritten token */
                token = chosen < 0 ? UNPACK_INDEX(bb) : -2 - chosen;
            }
        } else {
            __global const uint* ck = ws + cand_at + (long)row * kc;
            __global const int* ci = (__global const int*)ws + cand_at + (long)rows * kc + (long)row * kc;
            if (greedy || ck[0] >= 0xff800000u) {
                token = ci[0];   /* greedy; a NaN or +inf: the row's argmax */
            } else {
                const float c0 = sampling_value(ck[0]) * inv;
                float z = 0.0f;
                if (norm_all)
                    z = total * exp(mx - c0);
                else
                    for (int i = 0; i < kc; ++i)
                        z += exp(sampling_value(ck[i]) * inv - c0);
                /* the nucleus: candidates whose preceding mass is below top_p (the first always) */
                float before = 0.0f;
                int keep = 0;
                for (; keep < kc; ++keep) {
                    if (keep > 0 && !(before < top_p * z))
                        break;
                    before += exp(sampling_value(ck[keep]) * inv - c0);
                }
                const float target = u * before;
                float acc = 0.0f;
                token = ci[keep - 1];
                for (int i = 0; i < keep; ++i) {
                    const float e = exp(sampling_value(ck[i]) * inv - c0);
                    acc += e;
                    if (acc > target && e > 0.0f) {
                        token = ci[i];
                        break;
                    }
                }
            }
        }
        pick = token;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int token = pick;
    if (token >= 0) {
        if (lid == 0)
            out[row] = token;
        return;
    }
    if (lid == -2 - token) {
        /* this item's segment holds the token: the first whose running sum exceeds what is left */
        const float mx = lm[0], target = left;
        float acc = 0.0f;
        int found = -1;
        for (int i = s0; i < s1; ++i) {
            const float e = exp(LOAD(xr, i) * inv - mx);
            if (e > 0.0f) {
                found = i;
                acc += e;
                if (target >= 0.0f && acc > target)
                    break;
            }
        }
        out[row] = found;
    }
}
