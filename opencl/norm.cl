/* isthmus: norm.cl -- rmsnorm and layernorm over the last dimension, optionally fused with a residual add
 *
 * Kernels (LAYERNORM = 0: rmsnorm, 1: layernorm; a fixed define of each op's spec):
 *   __kernel void rmsnorm(const long rows, const long cols, const ACC eps, const ACC offset,
 *                         __global const T* x, __global const T* w, __global T* res, __global T* out)
 *   __kernel void layernorm(const long rows, const long cols, const ACC eps, __global const T* x,
 *                           __global const T* w, __global const T* b, __global T* res, __global T* out)
 * x, out: rows x cols, row-major (any leading dimensions flattened into rows); w, b: cols.
 * HAS_RESIDUAL = 1: s = x + res, rounded to T, is written to res (res += x in place) and normalized;
 * else s = x (res is not touched: the op passes x there).
 *   rmsnorm:   out[r, c] = s[r, c] / sqrt(mean_c(s[r, :]^2) + eps) * (offset + w[c])
 *              (offset = 1: Gemma's (1 + w))
 *   layernorm: out[r, c] = (s[r, c] - mean) / sqrt(var + eps) * w[c] + b[c], var the biased
 *              variance of the row; w (HAS_WEIGHT) and b (HAS_BIAS) may be absent (1 and 0).
 *              LAYOUT 0: the row's mean from a team sum of the held values, then the squared
 *              deviations from that mean over the same registers (a second pass over registers,
 *              not memory: no difference of large sums); chunks a team streams (rows wider than
 *              it holds) each give their exact (count, mean, m2), merged by Chan's formula.
 * in ACC arithmetic (float for half and bfloat16), rounded once on store.
 * out may be x (each group reads its row before it writes it); res shares memory with nothing else.
 * dtypes: float double half bfloat16.
 *
 * LAYOUT 0 (GPUs): a team of TPR = WG/RPG items per row, RPG rows per work-group.  A row is cut
 * into chunks of VPT consecutive elements; item t owns chunks t, t + TPR, t + 2 TPR, ...  Its
 * first CACHE chunks are held in registers between the reduction and the write (one read and one
 * write per element); chunks past them are streamed (read again for the write).  Where every row
 * start and cols allow it (cols % VPT == 0, every buffer aligned to VPT elements), a chunk of a
 * 4-byte or bfloat16 type moves as one 4/8/16/32-byte vector (uint, uint2, uint4 words).  The
 * team's partial sums (rmsnorm one, layernorm two: the mean, then the squared deviations) are
 * added by team_sum: on CUDA in float by warp shuffles (one barrier for teams wider than a warp,
 * none within one); elsewhere in local memory in two levels (PARTS items, then one): 3 barriers.
 * LAYOUT 1 (CPUs): a row per work-item, in 16-wide OpenCL vectors (two passes over the row, the
 * second one served by the core's cache); RPG, VPT, CACHE unused.
 * Tunables (-D): LAYOUT, WG, RPG, VPT, CACHE: declared once, with their values, defaults and
 *   restrictions, in the ops' specs (python/isthmus/ops/specs/rmsnorm.py, layernorm.py); any config is correct for
 *   any rows and cols.
 * Launch (1-D): LAYOUT 0: global = (ceil(rows / RPG) * WG,); LAYOUT 1: (ceil(rows / WG) * WG,);
 *   local = (WG,).  Needs cols < 2^31.
 */
#if !defined(LAYOUT) || !defined(WG) || !defined(RPG) || !defined(VPT) || !defined(CACHE)
#  error "norm.cl: build it through its op, which passes every tunable (-D)"
#endif
#ifndef HAS_RESIDUAL
#  define HAS_RESIDUAL 0
#endif
#ifndef LAYERNORM
#  define LAYERNORM 0
#endif
#ifndef HAS_WEIGHT
#  define HAS_WEIGHT 1   /* rmsnorm's weight is required */
#endif
#ifndef HAS_BIAS
#  define HAS_BIAS 0
#endif
#if LAYOUT == 0 && (RPG > WG || WG % RPG != 0)
#  error "norm.cl: RPG must divide WG"
#endif
#define TPR (WG / RPG)

/* a value as T would store it, back in ACC (the residual sum is normalized as it is stored) */
#if IS_HALF
static inline float round_t(float v)
{
    ushort h;
    vstore_half(v, 0, (__private half*)&h);
    return vload_half(0, (const __private half*)&h);
}
#elif IS_BF16
#  define round_t(v) BF16_TO_FLOAT(FLOAT_TO_BF16(v))
#else
#  define round_t(v) (v)
#endif

#if LAYOUT == 0
/* ---- GPUs: chunks of VPT elements, as words where the type and alignment allow ---- */
#if T_ID == ISTHMUS_ID_float
#  define WORDS VPT          /* 32-bit words per chunk */
#elif IS_BF16
#  define WORDS (VPT / 2)
#else
#  define WORDS 0            /* half, double: element by element */
#endif
#if WORDS == 3 || WORDS > 8
#  undef WORDS
#  define WORDS 0
#endif
#define CHUNK_BYTES (VPT * (int)sizeof(T))

static inline int aligned(__global const T* p)
{
    return ((ulong)p % (ulong)CHUNK_BYTES) == 0;
}

#if WORDS > 0
static inline void load_words(__global const T* p, uint* u)
{
#if WORDS == 1
    u[0] = *(__global const uint*)p;
#elif WORDS == 2
    const uint2 a = *(__global const uint2*)p;
    u[0] = a.x; u[1] = a.y;
#else
#pragma unroll
    for (int k = 0; k < WORDS / 4; ++k) {
        const uint4 a = ((__global const uint4*)p)[k];
        u[4 * k] = a.x; u[4 * k + 1] = a.y; u[4 * k + 2] = a.z; u[4 * k + 3] = a.w;
    }
#endif
}

static inline void store_words(__global T* p, const uint* u)
{
#if WORDS == 1
    *(__global uint*)p = u[0];
#elif WORDS == 2
    uint2 a;
    a.x = u[0]; a.y = u[1];
    *(__global uint2*)p = a;
#else
#pragma unroll
    for (int k = 0; k < WORDS / 4; ++k) {
        uint4 a;
        a.x = u[4 * k]; a.y = u[4 * k + 1]; a.z = u[4 * k + 2]; a.w = u[4 * k + 3];
        ((__global uint4*)p)[k] = a;
    }
#endif
}
#endif

/* the chunk at column c of a row (p: the row's start) into v; columns at or past lim read 0 */
static inline void load_chunk(__global const T* p, int c, int lim, int vec, ACC* v)
{
#if WORDS > 0
    if (vec) {   /* cols % VPT == 0: a chunk is wholly inside the row or wholly past it */
        if (c < lim) {
            uint u[WORDS];
            load_words(p + c, u);
#pragma unroll
            for (int k = 0; k < WORDS; ++k) {
#if IS_BF16
                v[2 * k] = as_float(u[k] << 16);
                v[2 * k + 1] = as_float(u[k] & 0xffff0000u);
#else
                v[k] = as_float(u[k]);
#endif
            }
        } else {
#pragma unroll
            for (int k = 0; k < VPT; ++k) v[k] = (ACC)0;
        }
        return;
    }
#endif
#pragma unroll
    for (int k = 0; k < VPT; ++k) v[k] = c + k < lim ? LOAD(p, c + k) : (ACC)0;
}

static inline void store_chunk(__global T* p, int c, int lim, int vec, const ACC* v)
{
#if WORDS > 0
    if (vec) {
        if (c < lim) {
            uint u[WORDS];
#pragma unroll
            for (int k = 0; k < WORDS; ++k) {
#if IS_BF16
                u[k] = (uint)FLOAT_TO_BF16(v[2 * k]) | ((uint)FLOAT_TO_BF16(v[2 * k + 1]) << 16);
#else
                u[k] = as_uint(v[k]);
#endif
            }
            store_words(p + c, u);
        }
        return;
    }
#endif
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        if (c + k < lim) STORE(p, c + k, v[k]);
}

/* first level of the team's reduction: PARTS items add TPR/PARTS partial sums each */
#if TPR >= 512
#  define PARTS 32
#elif TPR >= 64
#  define PARTS 8
#elif TPR >= 8
#  define PARTS 4
#elif TPR >= 2
#  define PARTS 2
#else
#  define PARTS 1
#endif

/* s = x (+ res, rounded, written back) for the chunk at column c */
static inline void add_chunk(__global const T* xr, __global T* rr, int c, int lim, int vec, ACC* s)
{
    load_chunk(xr, c, lim, vec, s);
#if HAS_RESIDUAL
    ACC r[VPT];
    load_chunk(rr, c, lim, vec, r);
#pragma unroll
    for (int k = 0; k < VPT; ++k) s[k] = round_t(s[k] + r[k]);
    store_chunk(rr, c, lim, vec, s);
#endif
}

#if LAYERNORM
/* Chan et al.: the (count, mean, sum of squared deviations) of a part merged into *n, *mean, *m2 */
static inline void merge(ACC* n, ACC* mean, ACC* m2, ACC nb, ACC mb, ACC m2b)
{
    if (nb > (ACC)0) {
        const ACC nn = *n + nb, d = mb - *mean, f = nb / nn;
        *mean += d * f;
        *m2 += m2b + d * d * *n * f;
        *n = nn;
    }
}

/* a streamed chunk's values before lim (column c): its own exact (count, mean, m2), merged */
static inline void merge_chunk(const ACC* v, int c, int lim, ACC* n, ACC* mean, ACC* m2)
{
    ACC a = (ACC)0, cnt = (ACC)0;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        if (c + k < lim) { a += v[k]; cnt += (ACC)1; }
    const ACC mu = cnt > (ACC)0 ? a / cnt : (ACC)0;
    ACC q = (ACC)0;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        if (c + k < lim) { const ACC d = v[k] - mu; q += d * d; }
    merge(n, mean, m2, cnt, mu, q);
}
#endif

/* the sum of v over the item's team, in every item of it (every item of the group calls it, with
 * its own part array per call: no barrier is needed after it).  CUDA: butterfly warp shuffles
 * (a team within a warp needs no local memory and no barrier; a wider one adds its warps' sums
 * after one barrier); elsewhere in local memory, in two levels (PARTS items, then one): 3 barriers. */
#if TPR > 1 && defined(ISTHMUS_CUDA) && ACC_ID == ISTHMUS_ID_float
#  define TEAM_SHFL 1
#  define PART_SIZE (WG / 32 > 0 ? WG / 32 : 1)
/* v of the lane whose index differs from this one's by the bits of lanes (PTX, as softmax.cl) */
static inline float shfl_xor(float v, int lanes)
{
    float r;
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(lanes));
    return r;
}
#else
#  define TEAM_SHFL 0
#  define PART_SIZE WG
#endif
/* a __local pointer parameter (CUDA: a plain pointer; __shared__ is not part of a pointer type) */
#ifdef ISTHMUS_CUDA
#  define LOCAL_PTR
#else
#  define LOCAL_PTR __local
#endif
static inline ACC team_sum(ACC v, LOCAL_PTR ACC* part, int lid, int t, int base)
{
#if TPR == 1
    return v;
#elif TEAM_SHFL
#pragma unroll
    for (int o = (TPR < 32 ? TPR : 32) / 2; o > 0; o /= 2) v += shfl_xor(v, o);
#if TPR > 32
    if (lid % 32 == 0) part[lid / 32] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    v = (ACC)0;
#pragma unroll
    for (int i = 0; i < TPR / 32; ++i) v += part[base / 32 + i];
#endif
    return v;
#else
    part[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < PARTS) {   /* (reads base + t + i * PARTS: no other item writes those in this step) */
        ACC a = (ACC)0;
        for (int i = base + t; i < base + TPR; i += PARTS) a += part[i];
        part[base + t] = a;
    }
#if PARTS > 1
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        ACC a = (ACC)0;
        for (int i = base; i < base + PARTS; ++i) a += part[i];
        part[base] = a;
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    return part[base];
#endif
}

/* out's chunk at column c from s: rmsnorm s * a * (m + w) (a = 1/rms, m = offset); layernorm
 * (s - m) * a * w + b (a = 1/std, m = mean) */
static inline void write_chunk(__global const T* w, __global const T* b, __global T* yr, int c, int lim, int vec,
                               ACC a, ACC m, ACC* s)
{
#if HAS_WEIGHT
    ACC g[VPT];
    load_chunk(w, c, lim, vec, g);
#endif
#if LAYERNORM
#if HAS_BIAS
    ACC h[VPT];
    load_chunk(b, c, lim, vec, h);
#endif
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        ACC v = (s[k] - m) * a;
#if HAS_WEIGHT
        v *= g[k];
#endif
#if HAS_BIAS
        v += h[k];
#endif
        s[k] = v;
    }
#else
#pragma unroll
    for (int k = 0; k < VPT; ++k) s[k] = s[k] * a * (m + g[k]);
#endif
    store_chunk(yr, c, lim, vec, s);
}
#endif /* LAYOUT == 0 */

#if LAYOUT == 1
/* ---- CPUs: a row per work-item, 16 elements at a time ---- */
#define VCAT_(a, b) a##b
#define VCAT(a, b) VCAT_(a, b)
typedef VCAT(ACC, 16) accv;
#if IS_HALF
#  define VLOAD16(p, i) vload_half16(0, (p) + (i))
#  define VSTORE16(v, p, i) vstore_half16((v), 0, (p) + (i))
#elif IS_BF16
#  define VLOAD16(p, i) as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
#  define VSTORE16(v, p, i) vstore16(float16_to_bf16(v), 0, (p) + (i))
/* FLOAT_TO_BF16 on 16 lanes: round to nearest even, NaN kept quiet */
static inline ushort16 float16_to_bf16(float16 f)
{
    const uint16 u = as_uint16(f);
    const uint16 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort16(select(rounded, (u >> 16) | 0x40u, (u & 0x7fffffffu) > 0x7f800000u));
}
#else
#  define VLOAD16(p, i) vload16(0, (p) + (i))
#  define VSTORE16(v, p, i) vstore16((v), 0, (p) + (i))
#endif

static inline ACC hsum(accv v)
{
    const VCAT(ACC, 8) a = v.lo + v.hi;
    const VCAT(ACC, 4) b = a.lo + a.hi;
    const VCAT(ACC, 2) c = b.lo + b.hi;
    return c.lo + c.hi;
}

/* one row: s (the residual added and stored first) and its sum (layernorm: the mean, then the
 * squared deviations: exact two passes; rmsnorm: the sum of squares), then the write, each pass
 * after the first served by the core's cache */
static inline void row_loop(__global const T* xr, __global const T* w, __global const T* b, __global T* rr,
                            __global T* yr, int cols, ACC eps, ACC offset)
{
    const int nv = cols / 16 * 16;
    accv q16 = (accv)0;
    ACC q = (ACC)0;
#if HAS_RESIDUAL
    for (int c = 0; c < nv; c += 16) {
        accv s = VLOAD16(xr, c) + VLOAD16(rr, c);
        VSTORE16(s, rr, c);
#if IS_HALF || IS_BF16
        s = VLOAD16(rr, c);   /* as stored (rounded to T): what is normalized */
#endif
        q16 += LAYERNORM ? s : s * s;
    }
    for (int c = nv; c < cols; ++c) {
        const ACC s = round_t(LOAD(xr, c) + LOAD(rr, c));
        STORE(rr, c, s);
        q += LAYERNORM ? s : s * s;
    }
    __global const T* sr = rr;
#else
    for (int c = 0; c < nv; c += 16) {
        const accv s = VLOAD16(xr, c);
        q16 += LAYERNORM ? s : s * s;
    }
    for (int c = nv; c < cols; ++c) {
        const ACC s = LOAD(xr, c);
        q += LAYERNORM ? s : s * s;
    }
    __global const T* sr = xr;
#endif
#if LAYERNORM
    const ACC m = (q + hsum(q16)) / (ACC)cols;
    q16 = (accv)0;
    q = (ACC)0;
    for (int c = 0; c < nv; c += 16) {
        const accv d = VLOAD16(sr, c) - m;
        q16 += d * d;
    }
    for (int c = nv; c < cols; ++c) {
        const ACC d = LOAD(sr, c) - m;
        q += d * d;
    }
    const ACC a = (ACC)1 / sqrt((q + hsum(q16)) / (ACC)cols + eps);
    for (int c = 0; c < nv; c += 16) {
        accv v = (VLOAD16(sr, c) - m) * a;
#if HAS_WEIGHT
        v *= VLOAD16(w, c);
#endif
#if HAS_BIAS
        v += VLOAD16(b, c);
#endif
        VSTORE16(v, yr, c);
    }
    for (int c = nv; c < cols; ++c) {
        ACC v = (LOAD(sr, c) - m) * a;
#if HAS_WEIGHT
        v *= LOAD(w, c);
#endif
#if HAS_BIAS
        v += LOAD(b, c);
#endif
        STORE(yr, c, v);
    }
#else
    const ACC a = (ACC)1 / sqrt((q + hsum(q16)) / (ACC)cols + eps);
    for (int c = 0; c < nv; c += 16) VSTORE16(VLOAD16(sr, c) * a * (offset + VLOAD16(w, c)), yr, c);
    for (int c = nv; c < cols; ++c) STORE(yr, c, LOAD(sr, c) * a * (offset + LOAD(w, c)));
#endif
}
#endif /* LAYOUT == 1 */

/* the kernel: one body, two entry points (a team per row on GPUs, a row per item on CPUs) */
#if LAYERNORM
__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void layernorm(const long rows, const long cols, const ACC eps, __global const T* x, __global const T* w,
               __global const T* b, __global T* res, __global T* out)
{
#if LAYOUT == 1
    const ACC offset = (ACC)0;   /* (rmsnorm's) */
#endif
#else
__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void rmsnorm(const long rows, const long cols, const ACC eps, const ACC offset,
             __global const T* x, __global const T* w, __global T* res, __global T* out)
{
    __global const T* b = x;   /* (no bias) */
#endif
#if LAYOUT == 1
    const long row = (long)get_global_id(0);
    if (row < rows)
        row_loop(x + row * cols, w, b, res + row * cols, out + row * cols, (int)cols, eps, offset);
#else
    __local ACC part[PART_SIZE];
#if LAYERNORM
    __local ACC part2[PART_SIZE];
#endif
    const int lid = (int)get_local_id(0);
    const int t = lid % TPR, base = lid - t;
    const long row = (long)get_group_id(0) * RPG + lid / TPR;
    /* a team past the last row sees an empty row: no early return (barriers below) */
    const int lim = row < rows ? (int)cols : 0;
    const long off = row < rows ? row * cols : 0;
    __global const T* xr = x + off;
    __global T* rr = res + off;
    __global T* yr = out + off;
    const int vec = WORDS > 0 && cols % VPT == 0 && aligned(x) && aligned(out) && (!HAS_RESIDUAL || aligned(res))
                    && (!HAS_WEIGHT || aligned(w)) && (!LAYERNORM || !HAS_BIAS || aligned(b));
    const int first = (t + CACHE * TPR) * VPT;   /* this item's first streamed column */
#if CACHE > 0
    ACC held[CACHE][VPT];
#pragma unroll
    for (int j = 0; j < CACHE; ++j) add_chunk(xr, rr, (t + j * TPR) * VPT, lim, vec, held[j]);
#endif
#if LAYERNORM
    /* the mean: the held values' sum (0 past the row) and the streamed chunks' (count, mean, m2),
     * each chunk exact over itself and merged by Chan's formula */
    ACC sn = (ACC)0, smean = (ACC)0, sm2 = (ACC)0, q = (ACC)0;
    for (int c = first; c < lim; c += TPR * VPT) {
        ACC s[VPT];
        add_chunk(xr, rr, c, lim, vec, s);
        merge_chunk(s, c, lim, &sn, &smean, &sm2);
    }
#if CACHE > 0
#pragma unroll
    for (int j = 0; j < CACHE; ++j)
#pragma unroll
        for (int k = 0; k < VPT; ++k) q += held[j][k];
#endif
    const ACC m = team_sum(q + sn * smean, part, lid, t, base) / (ACC)(lim > 0 ? lim : 1);
    /* the variance: squared deviations from the row's mean over the held values (a second pass
     * over registers: no difference of large sums), the streamed part's by Chan's formula */
    const ACC dm = smean - m;
    q = sm2 + sn * dm * dm;
#if CACHE > 0
#pragma unroll
    for (int j = 0; j < CACHE; ++j)
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const ACC d = held[j][k] - m;
            q += (t + j * TPR) * VPT + k < lim ? d * d : (ACC)0;
        }
#endif
    const ACC a = (ACC)1 / sqrt(team_sum(q, part2, lid, t, base) / (ACC)cols + eps);
#else
    ACC q = (ACC)0;   /* the sum of squares */
#if CACHE > 0
#pragma unroll
    for (int j = 0; j < CACHE; ++j)
#pragma unroll
        for (int k = 0; k < VPT; ++k) q += held[j][k] * held[j][k];
#endif
    for (int c = first; c < lim; c += TPR * VPT) {
        ACC s[VPT];
        add_chunk(xr, rr, c, lim, vec, s);
#pragma unroll
        for (int k = 0; k < VPT; ++k) q += s[k] * s[k];
    }
    const ACC a = (ACC)1 / sqrt(team_sum(q, part, lid, t, base) / (ACC)cols + eps), m = offset;
#endif

    /* the write: streamed chunks read again (the residual's stored sum), then the held ones */
#if HAS_RESIDUAL
    __global const T* sr = rr;
#else
    __global const T* sr = xr;
#endif
    for (int c = first; c < lim; c += TPR * VPT) {
        ACC s[VPT];
        load_chunk(sr, c, lim, vec, s);
        write_chunk(w, b, yr, c, lim, vec, a, m, s);
    }
#if CACHE > 0
#pragma unroll
    for (int j = 0; j < CACHE; ++j) write_chunk(w, b, yr, (t + j * TPR) * VPT, lim, vec, a, m, held[j]);
#endif
#endif
}
