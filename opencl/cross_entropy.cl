/* isthmus: cross_entropy.cl -- softmax cross-entropy per row, its gradient in the same pass
 *
 * Kernels (1-D, local = (WG,)):
 *   ce_count(rows, cols, targets, ignore_index, ws)             one group
 *       ws[0] = targets that are not ignore_index, ws[1] = those out of [0, cols) among them
 *   ce_rows(rows, cols, row0, x, targets, ignore_index, smoothing, z_loss, mean, ws, grad)
 *       a group per row r of x (rows x cols, row-major), whose target is targets[row0 + r]:
 *       ws[2 + row0 + r] = its loss; with GRAD, grad[r, :] = d(loss)/d(x[r, :])
 *       (grid = rows groups)
 *   ce_final(rows, reduction, ws, out)
 *       reduction 0 ("none"): out[r] = ws[2 + r] (any number of groups, grid-strided);
 *       1 ("sum") / 2 ("mean"): out[0] = sum of ws[2 + r] over r in a fixed order (/ ws[0] for the
 *       mean), by one group
 *   ce_copy(n, src, src_off, dst, dst_off)     dst[dst_off + i] = src[src_off + i] (fused linear CE's chunks)
 *   ce_bias_rows(rows, cols, bias, y)          y[r, c] = bias[c]
 *   ce_colsum(rows, cols, g, gb, beta)         gb[c] = sum over r of g[r, c] (+ gb[c] when beta)
 * Per row (t its target, C = cols, eps = smoothing, z = z_loss), as torch.nn.functional.cross_entropy
 * with Liger's / PaLM's z-loss:
 *   lse = log(sum_j exp(x_j)), loss = lse - (1 - eps) * x_t - eps / C * sum_j x_j + z * lse^2;
 *   grad_j = scale * (softmax_j * (1 + 2 z lse) - eps / C - (1 - eps) * [j == t]), scale = 1 / ws[0]
 *   for the mean (the count of ce_count, an earlier launch), else 1.
 *   A row whose target is ignore_index: loss 0, grad 0. A target out of [0, C) (and not ignored):
 *   loss NaN and a NaN gradient row (nothing is read out of bounds; the op checks on the host first
 *   unless told not to).
 * One pass over the row: each item streams its columns (c = lid + k*WG, VPT loads in flight) with an
 * online (max, sum of exp) update and the sum of the logits; the group merges the triples in local
 * memory (a tree: WG is a power of two); the gradient pass re-reads the row and writes grad, which may be
 * x itself (in place: each item reads the elements it writes, all reads of phase 1 happen before the
 * barrier).
 * dtypes: T float, double, half, bfloat16 (ushort bits): ACC float (double for double). TI: the
 * targets' type (int or long). GRAD: 0 or 1 (a build each).
 * ws: ACC words (counts are exact up to 2^24 rows in float; the op refuses more).
 * ROWLOOP = 1 (CPUs): a row per work-item, WG rows per group (grid = ceil(rows / WG) groups), three passes
 *   in NumPy's order, in 16-wide vectors where T is float or double on OpenCL; VPT unused.
 * Tunables (-D): WG (work-group size, a power of two), VPT (loads in flight per item), ROWLOOP; declared in
 *   python/isthmus/ops/specs/cross_entropy.py; correctness does not depend on them.
 */
#if !defined(WG) || !defined(VPT)
#  error "cross_entropy.cl: build it through its op, which passes every tunable (-D)"
#endif
#if (WG & (WG - 1)) != 0
#  error "cross_entropy.cl: WG must be a power of two"
#endif
#ifndef TI
#define TI int
#endif
#ifndef GRAD
#define GRAD 0
#endif
#define SHIFT(m) ((m) == -INFINITY ? (ACC)0 : (m))

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void ce_count(const int rows, const int cols, __global const TI* targets, const long ignore_index,
              __global ACC* ws)
{
    __local int cv[WG];
    __local int cb[WG];
    const int lid = (int)get_local_id(0);
    int v = 0, b = 0;
    for (int r = lid; r < rows; r += WG) {
        const long t = (long)targets[r];
        if (t != ignore_index) {
            ++v;
            if (t < 0 || t >= (long)cols)
                ++b;
        }
    }
    cv[lid] = v;
    cb[lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h /= 2) {
        if (lid < h) {
            cv[lid] += cv[lid + h];
            cb[lid] += cb[lid + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        ws[0] = (ACC)cv[0];
        ws[1] = (ACC)cb[0];
    }
}

#ifndef ROWLOOP
#define ROWLOOP 0
#endif
#if ROWLOOP && !defined(ISTHMUS_CUDA) && !IS_HALF && !IS_BF16
/* ROWLOOP on OpenCL with float or double: 16-wide vectors (a CPU compiler keeps them in SIMD registers
 * and takes its vector exp) */
#  define ROW_VEC 1
#  define VCAT_(a, b) a##b
#  define VCAT(a, b) VCAT_(a, b)
typedef VCAT(ACC, 16) accv;
typedef VCAT(ACC, 8) accv8;
typedef VCAT(ACC, 4) accv4;
typedef VCAT(ACC, 2) accv2;
static inline ACC vmax_all(const accv v)
{
    const accv8 a = fmax(v.lo, v.hi);
    const accv4 b = fmax(a.lo, a.hi);
    const accv2 c = fmax(b.lo, b.hi);
    return fmax(c.lo, c.hi);
}
static inline ACC vsum_all(const accv v)
{
    const accv8 a = v.lo + v.hi;
    const accv4 b = a.lo + a.hi;
    const accv2 c = b.lo + b.hi;
    return c.lo + c.hi;
}
#else
#  define ROW_VEC 0
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void ce_rows(const int rows, const int cols, const int row0, __global const T* x, __global const TI* targets,
             const long ignore_index, const ACC smoothing, const ACC z_loss, const int mean,
             __global ACC* ws, __global T* grad)
{
#if ROWLOOP
    /* a row per work-item (CPUs), NumPy's order: max and sum of x, then the sum of exp, then the
     * gradient (the row re-read from the core's cache) */
    const int r = (int)get_group_id(0) * WG + (int)get_local_id(0);
    if (r >= rows)
        return;
    const long off = (long)r * (long)cols;
    const long t = (long)targets[row0 + r];
    const int ignored = t == ignore_index;
    const int bad = !ignored && (t < 0 || t >= (long)cols);
    ACC m = -INFINITY, sum_x = (ACC)0, s = (ACC)0;
    int c = 0;
#if ROW_VEC
    __global const T* xr = x + off;
    const int nv = cols / 16;
    accv vm = (accv)(-INFINITY), vx = (accv)0, vs = (accv)0;
    for (int i = 0; i < nv; ++i) {
        const accv w = vload16(i, xr);
        vm = fmax(vm, w);   /* (fmax skips NaN; the exp below does not) */
        vx += w;
    }
    m = vmax_all(vm);
    sum_x = vsum_all(vx);
    for (c = nv * 16; c < cols; ++c) {
        m = xr[c] > m ? xr[c] : m;
        sum_x += xr[c];
    }
    const ACC sh = SHIFT(m);
    for (int i = 0; i < nv; ++i)
        vs += exp(vload16(i, xr) - sh);
    s = vsum_all(vs);
    for (c = nv * 16; c < cols; ++c)
        s += exp(xr[c] - sh);
#else
    for (c = 0; c < cols; ++c) {
        const ACC w = LOAD(x, off + c);
        m = w > m ? w : m;
        sum_x += w;
    }
    const ACC sh = SHIFT(m);
    for (c = 0; c < cols; ++c)
        s += exp(LOAD(x, off + c) - sh);
#endif
    const ACC lse = sh + log(s);
    const ACC xt = (ignored || bad) ? (ACC)0 : LOAD(x, off + t);
    const ACC inv_c = (ACC)1 / (ACC)cols;
    ws[2 + row0 + r] = ignored ? (ACC)0 : bad ? (ACC)NAN
                     : lse - ((ACC)1 - smoothing) * xt - smoothing * inv_c * sum_x + z_loss * lse * lse;
#if GRAD
    const ACC scale = mean ? (ACC)1 / ws[0] : (ACC)1;
    const ACC a = ignored ? (ACC)0 : bad ? (ACC)NAN : scale * ((ACC)1 + (ACC)2 * z_loss * lse);
    const ACC b = ignored ? (ACC)0 : scale * smoothing * inv_c;
    if (ignored) {
        for (c = 0; c < cols; ++c)
            STORE(grad, off + c, (ACC)0);
        return;
    }
#if ROW_VEC
    __global T* gr = grad + off;
    for (int i = 0; i < nv; ++i)
        vstore16(a * exp(vload16(i, xr) - lse) - b, i, gr);
    for (c = nv * 16; c < cols; ++c)
        gr[c] = a * exp(xr[c] - lse) - b;
#else
    for (c = 0; c < cols; ++c)
        STORE(grad, off + c, a * exp(LOAD(x, off + c) - lse) - b);
#endif
    if (!bad)   /* the target's element (x_t read before the pass above wrote over it) */
        STORE(grad, off + t, a * exp(xt - lse) - b - scale * ((ACC)1 - smoothing));
#endif
#else
    __local ACC sm[WG];
    __local ACC ss[WG];
    __local ACC sx[WG];
    __local ACC xt_l;
    const int lid = (int)get_local_id(0);
    const int r = (int)get_group_id(0);
    const long off = (long)r * (long)cols;
    const long t = (long)targets[row0 + r];
    const int ignored = t == ignore_index;
    const int bad = !ignored && (t < 0 || t >= (long)cols);

    /* phase 1: this item's max m, sum s of exp(x - m), sum of x */
    ACC m = -INFINITY, s = (ACC)0, sum_x = (ACC)0;
    for (int c0 = lid; c0 < cols; c0 += WG * VPT) {
        ACC w[VPT];
        ACC mk = -INFINITY;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = c0 + k * WG;
            w[k] = c < cols ? LOAD(x, off + c) : -INFINITY;
            mk = w[k] > mk ? w[k] : mk;
            sum_x += c < cols ? w[k] : (ACC)0;
        }
        if (mk > m) { s *= exp(m - mk); m = mk; }   /* m = -inf: s is 0 */
        const ACC sh = SHIFT(m);
#pragma unroll
        for (int k = 0; k < VPT; ++k) s += exp(w[k] - sh);
    }
    if (lid == 0)
        xt_l = (ignored || bad) ? (ACC)0 : LOAD(x, off + t);
    sm[lid] = m;
    ss[lid] = s;
    sx[lid] = sum_x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h /= 2) {
        if (lid < h) {   /* reads [lid + h], which no item writes in this step */
            const ACC m1 = sm[lid], m2 = sm[lid + h];
            const ACC mm = m2 > m1 ? m2 : m1;
            const ACC sh = SHIFT(mm);
            ss[lid] = ss[lid] * exp(m1 - sh) + ss[lid + h] * exp(m2 - sh);
            sm[lid] = mm;
            sx[lid] += sx[lid + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ACC lse = SHIFT(sm[0]) + log(ss[0]);
    const ACC inv_c = (ACC)1 / (ACC)cols;
    if (lid == 0) {
        const ACC loss = lse - ((ACC)1 - smoothing) * xt_l - smoothing * inv_c * sx[0] + z_loss * lse * lse;
        ws[2 + row0 + r] = ignored ? (ACC)0 : bad ? (ACC)NAN : loss;
    }
#if GRAD
    /* phase 2: the gradient, re-reading the row (ws[0]: the count, written by ce_count before) */
    const ACC scale = mean ? (ACC)1 / ws[0] : (ACC)1;
    const ACC a = bad ? (ACC)NAN : scale * ((ACC)1 + (ACC)2 * z_loss * lse);
    const ACC b = scale * smoothing * inv_c;
    const ACC on_t = scale * ((ACC)1 - smoothing);
    for (int c0 = lid; c0 < cols; c0 += WG * VPT) {
        ACC w[VPT];
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = c0 + k * WG;
            w[k] = c < cols ? LOAD(x, off + c) : (ACC)0;
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = c0 + k * WG;
            if (c < cols) {
                const ACC g = a * exp(w[k] - lse) - b - ((long)c == t ? on_t : (ACC)0);
                STORE(grad, off + c, ignored ? (ACC)0 : g);
            }
        }
    }
#endif
#endif  /* ROWLOOP */
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void ce_final(const int rows, const int reduction, __global const ACC* ws, __global T* out)
{
    const int lid = (int)get_local_id(0);
    if (reduction == 0) {
        for (long r = (long)get_group_id(0) * WG + lid; r < (long)rows; r += (long)get_num_groups(0) * WG)
            STORE(out, r, ws[2 + r]);
        return;
    }
    __local ACC part[WG];
    ACC s = (ACC)0;
    for (int r = lid; r < rows; r += WG)
        s += ws[2 + r];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h /= 2) {
        if (lid < h)
            part[lid] += part[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        STORE(out, 0, reduction == 2 ? part[0] / ws[0] : part[0]);   /* no target counted: 0 / 0 = NaN */
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void ce_copy(const long n, __global const T* src, const long src_off, __global T* dst, const long dst_off)
{
    for (long i = (long)get_global_id(0); i < n; i += (long)get_global_size(0))
        STORE(dst, dst_off + i, LOAD(src, src_off + i));
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void ce_bias_rows(const int rows, const int cols, __global const T* bias, __global T* y)
{
    const long n = (long)rows * (long)cols;
    for (long i = (long)get_global_id(0); i < n; i += (long)get_global_size(0))
        STORE(y, i, LOAD(bias, i % cols));
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void ce_colsum(const int rows, const int cols, __global const T* g, __global T* gb, const int beta)
{
    for (int c = (int)get_global_id(0); c < cols; c += (int)get_global_size(0)) {
        ACC s = beta ? LOAD(gb, c) : (ACC)0;
        for (int r = 0; r < rows; ++r)
            s += LOAD(g, (long)r * cols + c);
        STORE(gb, c, s);
    }
}
