/* isthmus: softmax.cl -- numerically stable softmax of each row
 *
 * Kernel:
 *   __kernel void softmax(const int rows, const int cols, __global const T* x, __global T* y)
 * x, y: rows x cols, row-major; y may be x (in place: every item reads the elements it writes
 * before it writes them, and no other item touches them).  y[r,:] = exp(x[r,:] - max) / sum(...).
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
 *   step), CACHE (steps of TPR*VPT elements held in registers; 0: two-pass); their values, defaults
 *   and the restrictions that shape the tuning space are declared once, in the op's spec
 *   (python/isthmus/ops/specs/softmax.py); correctness does not depend on them.
 * Launch (1-D):  global = (ceil(rows / RPG) * WG,)   local = (WG,)
 */
#ifndef WG
#define WG 256
#endif
#ifndef RPG
#define RPG 1
#endif
#ifndef VPT
#define VPT 4
#endif
#ifndef CACHE
#define CACHE 0
#endif
#if RPG > WG || WG % RPG != 0
#  error "softmax.cl: RPG must divide WG"
#endif
#define TPR (WG / RPG)   /* items per row */
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

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void softmax(const int rows, const int cols, __global const T* x, __global T* y)
{
#if TPR > 1
    __local ACC sm[WG];
    __local ACC ss[WG];
#endif
    const int lid = (int)get_local_id(0);
#if RPG == 1
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
    for (int c0 = first; c0 < lim; c0 += TPR * VPT) {
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

    /* phase 2: merge the team's TPR pairs.  Empty items carry m = -inf, s = 0: their terms are 0
     * (or NaN when their s is). */
#if TPR > 1
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
