/* isthmus: softmax.cl -- numerically stable softmax of each row
 *
 * Kernel:
 *   __kernel void softmax(const int rows, const int cols, __global const T* x, __global T* y)
 * x, y: rows x cols, row-major; y may be x (in place: every item reads the elements it writes
 * before it writes them, and no other item touches them), except with SPLIT > 1 (a group whose
 * siblings are late reads the whole row, which they may have written meanwhile).
 * y[r,:] = exp(x[r,:] - max) / sum(...).
 * dtypes: float double half (ACC float for half).
 * A team of TPR = WG/RPG consecutive items owns a row; a work-group of WG items holds RPG rows
 * (RPG = 1: one row per group; RPG > 1: several short rows per group).  Item t of a team owns the row's
 * elements t + j*TPR (coalesced), in steps of TPR*VPT elements.  Three phases:
 *   1. read.  The first CACHE steps (CACHE*VPT elements per item) are loaded at once into
 *      registers; the item takes their max m, replaces each by exp(v - m) and sums them (one
 *      exp per element).  Columns past CACHE*TPR*VPT (the whole row when CACHE = 0) are
 *      streamed with an online (max, sum of exp) update, VPT loads in flight per step.
 *   2. reduce.  The team's (max, sum) pairs are merged in local memory in two levels: PARTS
 *      items merge TPR/PARTS pairs each, then the team's item 0 merges the PARTS results
 *      (3 barriers; none when TPR = 1).
 *   3. write.  Streamed columns are read again, last-read first (the re-read of a row longer
 *      than the registers hold is then served by the cache as far as it reaches), and written
 *      exp(x - max) / sum; then the registers are scaled by exp(m - max) / sum and stored.
 * SPLIT > 1 (RPG = 1): a row is split into SPLIT chunks of ceil(cols/SPLIT) (rounded up to 32),
 * each run by its own work-group as above (phase 1, 2: the chunk's (max, sum)); the groups of a row
 * meet through `ws`: each publishes its chunk's pair, then waits for its siblings' pairs and merges
 * them (SPLIT items poll one sibling each), and writes its chunk.  A wide row is then held in the
 * registers of several work-groups: one read and one write per element, at any row width.
 *   Groups take their chunk from a ticket counter (ws[0], 64-bit atomics), not from their group
 *   id, so a group waits only on groups that already run or that the next free slots run: no
 *   deadlock while a device runs at least SPLIT groups at once.  Every published word carries the
 *   launch's generation (ticket / (rows*SPLIT) + 1) in its top 32 bits, so nothing is ever reset:
 *   a word from an earlier launch does not match, and a graph can replay the launch as it is.
 *   A group whose siblings do not show up within SPIN polls (a device that runs fewer groups at
 *   once, e.g. a CPU with fewer threads than SPLIT) reads the whole row itself instead (slower,
 *   the same result): never a hang.  (A sibling that runs publishes within microseconds on a GPU;
 *   SPIN polls take about a millisecond there.)  SPIN < 0 always takes that path (tests force it).
 *   ws: 1 + 2 * (sizeof(ACC)/4) * rows * SPLIT 64-bit words, zero when first used, used by one
 *   launch at a time (the device's in-order queue); unused when SPLIT = 1.
 * ROWLOOP = 1 (CPUs): a row per work-item, NumPy's order: its max, then y = exp(x - max) and their
 * sum (one exp per element), then y *= 1/sum, y re-read from the core's cache; in 16-wide vectors
 * where T is float or double on OpenCL (a CPU compiler keeps them in SIMD registers and takes
 * its vector exp); elsewhere scalar, with the exp computed again in the last pass (no rounding of
 * a 16-bit intermediate).
 * So CACHE = 0 is the two-pass kernel (two reads + one write per element), a config whose
 * CACHE*TPR*VPT covers the row reads each element once (one read + one write, like a copy), and
 * a wide row holds what the registers take and re-reads only the rest.
 * Any config is correct for any rows and cols (the streamed part takes what the registers do not
 * hold; a team past the last row reads and writes nothing).
 * Special values, as NumPy and torch: -inf entries give 0; a row of all -inf gives NaN; a NaN or
 * a +inf anywhere in a row makes the whole row NaN (no term of the sum is skipped, so a NaN, or
 * the NaN of inf - inf, reaches the sum and every output through 1/sum).
 * cols == 0: nothing is written.  Needs cols + WG*VPT < 2^31.
 * Tunables (-D): WG (work-group size), RPG (rows per work-group), VPT (elements per work-item per
 *   step), CACHE (steps of TPR*VPT elements held in registers; 0: two-pass), SPLIT (work-groups per
 *   row; > 1 needs RPG = 1), ROWLOOP (1: each item runs its row alone in three passes, CPUs;
 *   RPG = WG), SPIN (polls for a sibling's pair before reading the row alone; not tuned); their
 *   values, defaults and the restrictions that shape the tuning space are declared once, in the
 *   op's spec (python/isthmus/ops/specs/softmax.py); correctness does not depend on them.
 * Launch (1-D):  global = (ceil(rows / RPG) * SPLIT * WG,)   local = (WG,)
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(CACHE) || !defined(ROWLOOP) || !defined(RPG) || !defined(SPLIT) || !defined(VPT) || \
    !defined(WG)
#  error "softmax.cl: build it through its op, which passes every tunable (-D)"
#endif
#ifndef SPIN
#define SPIN 1024
#endif
#if RPG > WG || WG % RPG != 0
#  error "softmax.cl: RPG must divide WG"
#endif
#if ROWLOOP && (RPG != WG || SPLIT != 1)
#  error "softmax.cl: ROWLOOP needs RPG = WG (a row per item) and SPLIT = 1"
#endif
#if SPLIT > 1 && (RPG != 1 || SPLIT > WG)
#  error "softmax.cl: SPLIT > 1 needs RPG = 1 and SPLIT <= WG"
#endif
#ifndef SHFL
#define SHFL 0
#endif
#define TPR (WG / RPG)   /* items per row */
/* SHFL = 1 (set by the op on devices with NVIDIA's inline PTX, not tuned): a team within one warp
 * (TPR <= 32, whole warps per group, float accumulation, one group per row) merges its pairs by
 * butterfly shuffles, without local memory or barriers: what narrow rows spend most time on */
#if SHFL && TPR > 1 && TPR <= 32 && WG % 32 == 0 && SPLIT == 1 && T_ID != ISTHMUS_ID_double
#  define TEAM_SHFL 1
#else
#  define TEAM_SHFL 0
#endif
/* first level of the reduction: PARTS items of a team merge TPR/PARTS pairs each */
#if TPR >= 512
#define PARTS 32
#elif TPR >= 128
#define PARTS 16
#elif TPR >= 32
#define PARTS 8
#elif TPR >= 8
#define PARTS 4
#elif TPR >= 2
#define PARTS 2
#else
#define PARTS 1
#endif
/* The shift for exp(v - m): m itself, or 0 while m is -inf (every value seen is -inf: exp gives
 * their 0, where v - m would be NaN).  No sum is ever skipped, so a NaN (or the NaN of inf - inf)
 * reaches the row's sum, and through 1/sum every output of the row. */
#define SHIFT(m) ((m) == -INFINITY ? (ACC)0 : (m))
/* a __local pointer parameter (CUDA: a plain pointer; __shared__ is not part of a pointer type) */
#ifdef ISTHMUS_CUDA
#  define LOCAL_PTR
#else
#  define LOCAL_PTR __local
#endif

/* ---- split rows: the groups of a row meet through ws (64-bit atomics: every word is written and
 * read whole, at the device's coherence point, so no fence is needed and no stale copy is seen) ---- */
#ifdef ISTHMUS_CUDA
typedef unsigned long long wsword;
#  define WS_TICKET(p) atomic_inc(p)
#  define WS_READ(p) atomic_add((p), 0ULL)
#  define WS_WRITE(p, v) atomic_xchg((p), (v))
#else
typedef ulong wsword;
#  if SPLIT > 1
#    pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#  endif
#  define WS_TICKET(p) atom_inc(p)
#  define WS_READ(p) atom_add((p), (ulong)0)
#  define WS_WRITE(p, v) atom_xchg((p), (v))
#endif
#define WORDS ((int)(sizeof(ACC) / sizeof(uint)))   /* 32-bit words of one ACC */
typedef union { ACC a; uint w[sizeof(ACC) / sizeof(uint)]; } acc_words;

#if SPLIT > 1
/* chunk `part`'s pair, each word tagged with the launch's generation */
static inline void split_publish(__global wsword* ws, long part, uint gen, ACC m, ACC s)
{
    acc_words a, b;
    a.a = m;
    b.a = s;
    __global wsword* p = ws + 1 + part * 2 * WORDS;
    for (int i = 0; i < WORDS; ++i) {
        WS_WRITE(p + i, ((wsword)gen << 32) | (wsword)a.w[i]);
        WS_WRITE(p + WORDS + i, ((wsword)gen << 32) | (wsword)b.w[i]);
    }
}

/* chunk `part`'s pair once this launch published it: 1, or 0 after SPIN polls of one word or once
 * another item of the group gave up (*failed: a CPU runs the items' polls one after another) */
static inline int split_wait(__global wsword* ws, long part, uint gen, ACC* m, ACC* s,
                             volatile LOCAL_PTR int* failed)
{
#if SPIN < 0
    return 0;
#else
    acc_words a, b;
    __global wsword* p = ws + 1 + part * 2 * WORDS;
    wsword v[2 * WORDS];
    for (int i = 0; i < 2 * WORDS; ++i)   /* every word's first read in flight at once */
        v[i] = WS_READ(p + i);
    for (int i = 0; i < 2 * WORDS; ++i) {
        for (int k = 0; (uint)(v[i] >> 32) != gen; ++k) {
            if (k >= SPIN || *failed)
                return 0;
            v[i] = WS_READ(p + i);
        }
        if (i < WORDS)
            a.w[i] = (uint)v[i];
        else
            b.w[i - WORDS] = (uint)v[i];
    }
    *m = a.a;
    *s = b.a;
    return 1;
#endif
}
#endif

#if ROWLOOP
#define VCAT_(a, b) a##b
#define VCAT(a, b) VCAT_(a, b)
#if !defined(ISTHMUS_CUDA) && !IS_HALF && !IS_BF16
#  define ROW_VEC 1
typedef VCAT(ACC, 16) accv;
typedef VCAT(ACC, 8) accv8;
typedef VCAT(ACC, 4) accv4;
typedef VCAT(ACC, 2) accv2;
#else
#  define ROW_VEC 0
#endif
/* ROWLOOP: one item's row (see the header) */
static inline void row_loop(__global const T* xr, __global T* yr, int cols)
{
    ACC m = -INFINITY, s = (ACC)0;
    int c = 0;
#if ROW_VEC
    const int nv = cols / 16;
    accv vm = (accv)(-INFINITY);
    for (int i = 0; i < nv; ++i) vm = fmax(vm, vload16(i, xr));   /* fmax skips NaN, like the > below */
    const accv8 m8 = fmax(vm.lo, vm.hi);
    const accv4 m4 = fmax(m8.lo, m8.hi);
    const accv2 m2 = fmax(m4.lo, m4.hi);
    m = fmax(m2.lo, m2.hi);
    for (c = nv * 16; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    const ACC sh = SHIFT(m);
    accv vs = (accv)0;
    for (int i = 0; i < nv; ++i) {
        const accv e = exp(vload16(i, xr) - sh);
        vstore16(e, i, yr);
        vs += e;
    }
    const accv8 s8 = vs.lo + vs.hi;
    const accv4 s4 = s8.lo + s8.hi;
    const accv2 s2 = s4.lo + s4.hi;
    s = s2.lo + s2.hi;
    for (c = nv * 16; c < cols; ++c) {
        const ACC e = exp(xr[c] - sh);
        yr[c] = e;
        s += e;
    }
    const ACC inv = (ACC)1 / s;   /* all -inf: 0 * inf = NaN below, as NumPy gives */
    for (int i = 0; i < nv; ++i) vstore16(vload16(i, yr) * inv, i, yr);
    for (c = nv * 16; c < cols; ++c) yr[c] = yr[c] * inv;
#else
    for (c = 0; c < cols; ++c) {
        const ACC v = LOAD(xr, c);
        m = v > m ? v : m;
    }
    const ACC sh = SHIFT(m);
    for (c = 0; c < cols; ++c) s += exp(LOAD(xr, c) - sh);
    const ACC inv = (ACC)1 / s;
    for (c = 0; c < cols; ++c) STORE(yr, c, exp(LOAD(xr, c) - sh) * inv);
#endif
}
#endif

/* phase 1's streamed part: the online (max, sum of exp) update over this item's columns from..lim */
static inline void stream_stats(__global const T* x, long off, int from, int lim, ACC* pm, ACC* ps)
{
    ACC m = *pm, s = *ps;
    for (int c0 = from; c0 < lim; c0 += TPR * VPT) {
        ACC w[VPT];
        ACC mk = -INFINITY;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = c0 + k * TPR;
            w[k] = c < lim ? LOAD(x, off + c) : -INFINITY;
            mk = w[k] > mk ? w[k] : mk;
        }
        if (mk > m) { s *= exp(m - mk); m = mk; }     /* m = -inf: s is 0, exp gives 0 */
        const ACC sh = SHIFT(m);
#pragma unroll
        for (int k = 0; k < VPT; ++k) s += exp(w[k] - sh);
    }
    *pm = m;
    *ps = s;
}

#if TEAM_SHFL
static inline float shfl_xor(float v, int lanes)
{
    float r;
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(lanes));
    return r;
}

/* phase 2 in a warp: the team's TPR lanes (an aligned part of one warp) merge their pairs by
 * butterfly shuffles; every lane ends with the team's pair.  m is never NaN (a max over
 * comparisons that skip NaN, from -inf), so the max is the same whichever lane holds it. */
static inline void team_merge_shfl(ACC* pm, ACC* ps)
{
    ACC m = *pm, s = *ps;
#pragma unroll
    for (int o = TPR / 2; o > 0; o /= 2) {
        const ACC om = shfl_xor(m, o), os = shfl_xor(s, o);
        const ACC mm = om > m ? om : m;
        const ACC sh = SHIFT(mm);
        s = s * exp(m - sh) + os * exp(om - sh);
        m = mm;
    }
    *pm = m;
    *ps = s;
}
#endif

#if TPR > 1 && !TEAM_SHFL
/* phase 2: merge the team's TPR pairs into sm[base], ss[base] (every item of the group calls it).
 * Empty items carry m = -inf, s = 0: their terms are 0 (or NaN when their s is). */
static inline void team_merge(LOCAL_PTR ACC* sm, LOCAL_PTR ACC* ss, int lid, int t, int base, ACC m, ACC s)
{
    sm[lid] = m; ss[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < PARTS) {   /* reads sm[base + t + i*PARTS]: no other item writes those */
        ACC mm = -INFINITY, u = (ACC)0;
        for (int i = base + t; i < base + TPR; i += PARTS) mm = sm[i] > mm ? sm[i] : mm;
        const ACC sh = SHIFT(mm);
        for (int i = base + t; i < base + TPR; i += PARTS) u += ss[i] * exp(sm[i] - sh);
        sm[base + t] = mm; ss[base + t] = u;
    }
#if PARTS > 1
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        ACC mm = -INFINITY, u = (ACC)0;
        for (int i = base; i < base + PARTS; ++i) mm = sm[i] > mm ? sm[i] : mm;
        const ACC sh = SHIFT(mm);
        for (int i = base; i < base + PARTS; ++i) u += ss[i] * exp(sm[i] - sh);
        sm[base] = mm; ss[base] = u;
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void softmax(const int rows, const int cols, __global const T* x, __global T* y, __global wsword* ws)
{
#if TPR > 1 && !TEAM_SHFL
    __local ACC sm[WG];
    __local ACC ss[WG];
#endif
#if SPLIT > 1
    __local wsword ticket_l;
    __local int failed;
#endif
    const int lid = (int)get_local_id(0);
#if SPLIT > 1
    /* this group's chunk: the next ticket (see the header) */
    if (lid == 0) ticket_l = WS_TICKET(ws);
    barrier(CLK_LOCAL_MEM_FENCE);
    const wsword ticket = ticket_l, total = (wsword)rows * SPLIT;
    const uint gen = (uint)(ticket / total) + 1u;
    const long part = (long)(ticket % total);
    const int row = (int)(part / SPLIT), chunk = (int)(part % SPLIT);
    const long cs = ((long)(cols + SPLIT - 1) / SPLIT + 31) / 32 * 32;   /* chunk length */
    const long c_begin = chunk * cs < (long)cols ? chunk * cs : (long)cols;
    const int t = lid, base = 0;
    const int lim = (int)(cs < (long)cols - c_begin ? cs : (long)cols - c_begin);
    const long row_off = (long)row * (long)cols;
    const long off = row_off + c_begin;
#elif RPG == 1
    const int t = lid, base = 0;                    /* the grid has exactly `rows` groups */
    const int lim = cols;
    const long off = (long)get_group_id(0) * (long)cols;
#else
    const int t = lid % TPR;                        /* item within its row's team */
    const int base = lid - t;                       /* the team's first slot in sm/ss */
    const int row = (int)get_group_id(0) * RPG + lid / TPR;
    /* a team past the last row sees an empty row: no early return (barriers below) */
    const int lim = row < rows ? cols : 0;
    const long off = row < rows ? (long)row * (long)cols : 0L;
#endif
#if ROWLOOP
    if (lim > 0) row_loop(x + off, y + off, lim);
    return;   /* (no barriers in this kernel: TPR = 1) */
#endif
    const int first = CACHE * TPR * VPT + t;        /* this item's first streamed column */

    /* phase 1: this item's max m and sum s of exp(x - m) */
    ACC m = -INFINITY, s = (ACC)0;
#if CACHE > 0
    ACC v[CACHE * VPT];
#pragma unroll
    for (int j = 0; j < CACHE * VPT; ++j) {   /* every load in flight at once */
        const int c = t + j * TPR;
        v[j] = c < lim ? LOAD(x, off + c) : -INFINITY;
        m = v[j] > m ? v[j] : m;
    }
    /* held = -inf: every held value is -inf (or past the row's end) */
    const ACC held = m;
    const ACC shift = SHIFT(held);
#pragma unroll
    for (int j = 0; j < CACHE * VPT; ++j) {
        v[j] = exp(v[j] - shift);
        s += v[j];
    }
#endif
    stream_stats(x, off, first, lim, &m, &s);

    /* phase 2: the team's (max, sum) */
#if TEAM_SHFL
    team_merge_shfl(&m, &s);
    const ACC mx = m;
    const ACC inv = (ACC)1 / s;   /* all -inf: 1/0 = inf, and the results below are NaN */
#elif TPR > 1
    team_merge(sm, ss, lid, t, base, m, s);
#if SPLIT > 1
    {
        /* the row's pair: publish this chunk's, wait for the siblings' and merge them all; or,
         * when a sibling does not show up in time, read the whole row (the same pair) */
        const ACC chunk_m = sm[0], chunk_s = ss[0];
        barrier(CLK_LOCAL_MEM_FENCE);   /* everyone read sm[0] before team_merge rewrites it */
        if (lid == 0) {
            split_publish(ws, part, gen, chunk_m, chunk_s);
            failed = 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        ACC pm = -INFINITY, ps = (ACC)0;
        if (lid < SPLIT && !split_wait(ws, (long)row * SPLIT + lid, gen, &pm, &ps, &failed))
            failed = 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int fail = failed;   /* the same for every item of the group */
        if (fail) {
            pm = -INFINITY;
            ps = (ACC)0;
            stream_stats(x, row_off, t, cols, &pm, &ps);
        }
        sm[lid] = pm; ss[lid] = ps;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* merge the SPLIT pairs (or the WG pairs of the whole row; both powers of two) into sm[0],
         * ss[0] by halves: log2 steps, where one item merging them one by one kept the whole group
         * waiting (the more groups a row has, the longer); not team_merge again: PoCL mishandles a
         * function with barriers called from two places */
        for (int h = (fail ? WG : SPLIT) / 2; h > 0; h /= 2) {
            if (lid < h) {   /* reads [lid + h], which no item writes in this step */
                const ACC m1 = sm[lid], m2 = sm[lid + h];
                const ACC mm = m2 > m1 ? m2 : m1;
                const ACC sh = SHIFT(mm);
                ss[lid] = ss[lid] * exp(m1 - sh) + ss[lid + h] * exp(m2 - sh);
                sm[lid] = mm;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
#endif
    const ACC mx = sm[base];
    const ACC inv = (ACC)1 / ss[base];   /* all -inf: 1/0 = inf, and the results below are NaN */
#else
    const ACC mx = m;
    const ACC inv = (ACC)1 / s;
#endif

    /* phase 3: write; the streamed columns first and backwards, while the cache still holds them */
    if (first < lim) {
        for (int c0 = first + (lim - 1 - first) / (TPR * VPT) * (TPR * VPT); c0 >= first; c0 -= TPR * VPT) {
            ACC w[VPT];
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int c = c0 + k * TPR;
                w[k] = c < lim ? LOAD(x, off + c) : (ACC)0;
            }
#pragma unroll
            for (int k = 0; k < VPT; ++k) {
                const int c = c0 + k * TPR;
                if (c < lim) STORE(y, off + c, exp(w[k] - mx) * inv);
            }
        }
    }
#if CACHE > 0
    /* an item whose values are all -inf in a row that is not: its zeros stay 0 (exp(0 - mx)
     * may overflow), or NaN when the row's sum is; a row of all -inf: 0 * exp(inf) * inf = NaN,
     * as NumPy gives */
    const ACC scale = (held == -INFINITY && mx != -INFINITY) ? (ACC)0 * inv : exp(shift - mx) * inv;
#pragma unroll
    for (int j = 0; j < CACHE * VPT; ++j) {
        const int c = t + j * TPR;
        if (c < lim) STORE(y, off + c, v[j] * scale);
    }
#endif
}
