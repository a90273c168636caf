/* isthmus: softmax.cl -- numerically stable softmax of each row
 *
 * Kernel:
 *   __kernel void softmax(const int rows, const int cols, __global const T* x, __global T* y)
 * x, y: rows x cols, row-major; y may be x (in place: every item reads the elements it writes
 * before the row's reduction).  y[r,:] = exp(x[r,:] - max) / sum(...).
 * dtypes: float double half (ACC float for half).
 * One work-group per row; item lid owns the row's elements lid + j*WG (coalesced), in steps of
 * WG*VPT elements.  Three phases:
 *   1. read.  The first CACHE steps (CACHE*VPT elements per item) are loaded at once into
 *      registers; the item takes their max m, replaces each by exp(v - m) and sums them (one
 *      exp per element).  Columns past CACHE*WG*VPT (the whole row when CACHE = 0) are
 *      streamed with an online (max, sum of exp) update, VPT loads in flight per step (one
 *      when CACHE > 0: a fallback outside the restrictions, kept off the registers).
 *   2. reduce.  The items' (max, sum) pairs are merged in local memory in two levels: PARTS
 *      items merge WG/PARTS pairs each, then item 0 merges the PARTS results (3 barriers).
 *   3. write.  Registers are scaled by exp(m - max) / sum and stored; streamed columns are
 *      read again and written exp(x - max) / sum.
 * So CACHE = 0 is the two-pass kernel (two reads + one write per element), and a config whose
 * CACHE*WG*VPT covers the row reads each element once (one read + one write, like a copy).
 * Any config is correct for any cols (the streamed part takes what the registers do not hold).
 * cols == 0: nothing is written.  -inf entries give 0; a row of all -inf gives NaN like
 * NumPy; NaN or +inf inside a row: result unspecified.  Needs cols + WG*VPT < 2^31.
 * Tunables (-D):
 *   WG     work-group size  32,64,128,256,512,1024  default 256
 *          restriction: WG <= max_work_group_size and 2*WG*sizeof(ACC) <= local_mem_size
 *   VPT    elements per work-item per step (optional)  1,2,4,8  default 4
 *   CACHE  steps of WG*VPT elements held in registers  0,1,2,4,8  default 0 (two-pass)
 *          restrictions (the tuning space; correctness does not depend on them):
 *            CACHE == 0 or cols <= WG*VPT*CACHE          (the whole row is held)
 *            CACHE <= 1 or VPT == 8                      (more steps only at the widest step:
 *                                                          VPT=4 CACHE=2 loads what VPT=8 CACHE=1 does)
 *            CACHE == 0 or VPT*CACHE == 1 or 2*cols > WG*VPT*CACHE
 *                                      (the smallest held config that fits: half the registers
 *                                       idle is the next smaller config plus waste)
 *            WG*VPT*CACHE*sizeof(ACC) <= 65536           (a held row takes <= 64 KiB of registers)
 *          With power-of-two values each holds for a whole problem bucket (cols rounded up to a
 *          power of two): a held config has WG*VPT*CACHE == the bucket (or VPT = CACHE = 1 and
 *          cols <= WG).
 * Launch (1-D):  global = (rows*WG,)   local = (WG,)
 */
#ifndef WG
#define WG 256
#endif
#ifndef VPT
#define VPT 4
#endif
#ifndef CACHE
#define CACHE 0
#endif
/* loads per step of the streamed columns: past the held ones (none within the restrictions)
 * one at a time, so that the fallback takes no registers from the held row */
#if CACHE > 0
#define SVPT 1
#else
#define SVPT VPT
#endif
/* first level of the reduction: PARTS items merge WG/PARTS pairs each */
#if WG >= 512
#define PARTS 32
#elif WG >= 128
#define PARTS 16
#else
#define PARTS 8
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void softmax(const int rows, const int cols, __global const T* x, __global T* y)
{
    __local ACC sm[WG];
    __local ACC ss[WG];
    const int row = (int)get_group_id(0);
    const int lid = (int)get_local_id(0);
    /* the grid has exactly `rows` groups: no early return (PoCL's barrier handling) */
    const long off = (long)row * (long)cols;

    /* phase 1: this item's max m and sum s of exp(x - m) */
    ACC m = -INFINITY, s = (ACC)0;
#if CACHE > 0
    ACC v[CACHE * VPT];
#pragma unroll
    for (int j = 0; j < CACHE * VPT; ++j) {   /* every load in flight at once */
        const int c = lid + j * WG;
        v[j] = c < cols ? LOAD(x, off + c) : -INFINITY;
        m = v[j] > m ? v[j] : m;
    }
    /* held = -inf: every held value is -inf (or past the row's end); exp(v - 0) gives their 0 */
    const ACC held = m;
    const ACC shift = held == -INFINITY ? (ACC)0 : held;
#pragma unroll
    for (int j = 0; j < CACHE * VPT; ++j) {
        v[j] = exp(v[j] - shift);
        s += v[j];
    }
#endif
    for (int base = lid + CACHE * WG * VPT; base < cols; base += WG * SVPT) {
        ACC w[SVPT];
        ACC mk = -INFINITY;
#pragma unroll
        for (int k = 0; k < SVPT; ++k) {
            const int c = base + k * WG;
            w[k] = c < cols ? LOAD(x, off + c) : -INFINITY;
            mk = w[k] > mk ? w[k] : mk;
        }
        if (mk > m) { s *= exp(m - mk); m = mk; }     /* m = -inf: s is 0, exp gives 0 */
        if (m != -INFINITY) {                         /* else all seen so far are -inf */
#pragma unroll
            for (int k = 0; k < SVPT; ++k) s += exp(w[k] - m);
        }
    }

    /* phase 2: merge the WG pairs.  Empty items carry m = -inf, s = 0 (their terms are 0
     * once the max is finite); a max of -inf skips the sums: no (-inf) - (-inf). */
    sm[lid] = m; ss[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < PARTS) {   /* reads sm[lid + i*PARTS]: no other item writes those */
        ACC mm = -INFINITY, t = (ACC)0;
        for (int i = lid; i < WG; i += PARTS) mm = sm[i] > mm ? sm[i] : mm;
        if (mm != -INFINITY)
            for (int i = lid; i < WG; i += PARTS) t += ss[i] * exp(sm[i] - mm);
        sm[lid] = mm; ss[lid] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        ACC mm = -INFINITY, t = (ACC)0;
        for (int i = 0; i < PARTS; ++i) mm = sm[i] > mm ? sm[i] : mm;
        if (mm != -INFINITY)
            for (int i = 0; i < PARTS; ++i) t += ss[i] * exp(sm[i] - mm);
        sm[0] = mm; ss[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const ACC mx = sm[0];
    const ACC inv = (ACC)1 / ss[0];   /* all -inf: 1/0 = inf, and the results below are NaN */

    /* phase 3: write */
#if CACHE > 0
    /* an item whose values are all -inf in a row that is not: its zeros stay 0 (exp(0 - mx)
     * may overflow); a row of all -inf: 0 * exp(inf) * inf = NaN, as NumPy gives */
    const ACC scale = (held == -INFINITY && mx != -INFINITY) ? (ACC)0 : exp(shift - mx) * inv;
#pragma unroll
    for (int j = 0; j < CACHE * VPT; ++j) {
        const int c = lid + j * WG;
        if (c < cols) STORE(y, off + c, v[j] * scale);
    }
#endif
    for (int base = lid + CACHE * WG * VPT; base < cols; base += WG * SVPT) {
        ACC w[SVPT];
#pragma unroll
        for (int k = 0; k < SVPT; ++k) {
            const int c = base + k * WG;
            w[k] = c < cols ? LOAD(x, off + c) : (ACC)0;
        }
#pragma unroll
        for (int k = 0; k < SVPT; ++k) {
            const int c = base + k * WG;
            if (c < cols) STORE(y, off + c, exp(w[k] - mx) * inv);
        }
    }
}
