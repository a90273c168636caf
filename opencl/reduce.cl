/* isthmus: reduce.cl -- sum or max of a vector, multi-stage
 *
 * Select the operation with -DOP_SUM=1 or -DOP_MAX=1 (exactly one).
 * Kernels (all 1-D, local = (WG,)):
 *   __kernel void reduce_first(const long n, __global const T* x, __global R* partial)
 *   __kernel void reduce_final(const long n, __global const R* x, __global OUT_T* out)
 * Each work-group reduces a grid-strided share of x[0..n) and writes one value:
 *   reduce_first: partial[get_group_id(0)];  reduce_final: out[0] (cast to OUT_T; one group).
 * dtypes: float double half int long uchar.  Sums accumulate in ACC (float for float/half,
 *   double for double) and give T; integer sums accumulate in 64 bits, wrapping modulo 2^64,
 *   and give long, or ulong for unsigned T (NumPy's promotion: int32 -> int64, uint8 -> uint64).
 *   Max gives T; identity -INFINITY (floats), INT_MIN, LONG_MIN, 0 (uchar); NaN propagates.
 *   n == 0 gives the identity (0 or the lowest value).
 * Tunables (-D): WG (work-group size), VPT (elements per item per pass), GROUPS (cap on stage-1
 *   groups: a host-side number, the kernels do not read it), LAYOUT; their values, defaults and
 *   restrictions are declared once, in the op's spec (python/isthmus/ops/specs/reduce.py).
 * Launch (the runtime chains the stages):
 *   G = max(1, min(GROUPS, (n + WG*VPT - 1) // (WG*VPT)))
 *   stage 1: reduce_first(n, x, partial)   global = (G*WG,) local = (WG,)   -> G partials
 *   stage 2: reduce_final(G, partial, out) global = (WG,)   local = (WG,)   -> out[0]
 *   reduce_final grid-strides, so any G works with one group.
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(LAYOUT) || !defined(VPT) || !defined(WG)
#  error "reduce.cl: build it through its op, which passes every tunable (-D)"
#endif
#if defined(OP_SUM) && OP_SUM
#  define ISTHMUS_SUM 1
#elif defined(OP_MAX) && OP_MAX
#  define ISTHMUS_SUM 0
#else
#  error "reduce.cl: compile with -DOP_SUM=1 or -DOP_MAX=1"
#endif

/* R: the type partial results live in (wrap-around ulong for integer sums); OUT_T: the result's */
#if ISTHMUS_SUM && !ACC_IS_FLOAT
#  define R ulong
#  if T_ID == ISTHMUS_ID_uchar || T_ID == ISTHMUS_ID_ulong
#    define OUT_T ulong
#  else
#    define OUT_T long
#  endif
#  define STORE_OUT(p, v) ((p)[0] = (OUT_T)(v))
#else
#  define R ACC
#  define OUT_T T
#  define STORE_OUT(p, v) STORE(p, 0, v)
#endif
#if ISTHMUS_SUM
#  define R_IDENTITY ((R)0)
#  define COMBINE(acc, v) ((acc) + (v))
#else
#  define R_IDENTITY ((R)ACC_LOWEST)
#  if ACC_IS_FLOAT
     /* NaN-propagating max (NumPy semantics) */
#    define COMBINE(acc, v) ((((v) > (acc)) || ((v) != (v))) ? (v) : (acc))
#  else
#    define COMBINE(acc, v) (((v) > (acc)) ? (v) : (acc))
#  endif
#endif

/* tree over the work-group in local memory; result valid in work-item 0 */
#define GROUP_TREE(sh, lid, acc)                                   \
    do {                                                           \
        sh[lid] = acc;                                             \
        barrier(CLK_LOCAL_MEM_FENCE);                              \
        for (int s_ = WG / 2; s_ > 0; s_ >>= 1) {                  \
            if ((int)(lid) < s_) sh[lid] = COMBINE(sh[lid], sh[lid + s_]); \
            barrier(CLK_LOCAL_MEM_FENCE);                          \
        }                                                          \
    } while (0)

#if LAYOUT == 0
/* grid-strided accumulation of GET(i) over i in [0, n): each pass of the group covers
 * WG*VPT consecutive elements, item j taking base + j + k*WG (coalesced) */
#define GRID_ACCUMULATE(acc, n, GET)                                           \
    do {                                                                       \
        const long stride_ = (long)get_num_groups(0) * (long)(WG * VPT);       \
        long base_ = (long)get_group_id(0) * (long)(WG * VPT) + (long)get_local_id(0); \
        for (; base_ + (long)(VPT - 1) * WG < (n); base_ += stride_) {         \
            R v_[VPT];                                                         \
            _Pragma("unroll")                                                  \
            for (int k_ = 0; k_ < VPT; ++k_) v_[k_] = (R)GET(base_ + k_ * WG); \
            _Pragma("unroll")                                                  \
            for (int k_ = 0; k_ < VPT; ++k_) acc = COMBINE(acc, v_[k_]);      \
        }                                                                      \
        for (int k_ = 0; k_ < VPT; ++k_) {                                     \
            const long i_ = base_ + k_ * WG;                                   \
            if (i_ < (n)) acc = COMBINE(acc, (R)GET(i_));                      \
        }                                                                      \
    } while (0)
#else
/* LAYOUT 1 (CPUs): each work-item reduces one contiguous chunk of [0, n) into VPT independent
 * accumulators. Sequential addresses stay in one core's cache and prefetcher stream, and the
 * unrolled accumulators vectorize (PoCL: about 2x NumPy's float32 sum on two cores, where the
 * strided GPU layout reaches a seventh of it). Chunks are whole multiples of VPT. */
/* this work-item's chunk [i_, hi_) of [0, n): an equal share, rounded up to whole VPT steps */
#define CHUNK_BOUNDS(n)                                                        \
        const long items_ = (long)get_global_size(0);                          \
        const long per_ = (((n) + items_ - 1) / items_ + VPT - 1) / VPT * VPT; \
        long i_ = (long)get_global_id(0) * per_;                               \
        long hi_ = i_ + per_;                                                  \
        if (hi_ > (n)) hi_ = (n)
#define GRID_ACCUMULATE(acc, n, GET)                                           \
    do {                                                                       \
        CHUNK_BOUNDS(n);                                                       \
        R a_[VPT];                                                             \
        for (int k_ = 0; k_ < VPT; ++k_) a_[k_] = R_IDENTITY;                  \
        for (; i_ + VPT <= hi_; i_ += VPT) {                                   \
            _Pragma("unroll")                                                  \
            for (int k_ = 0; k_ < VPT; ++k_) a_[k_] = COMBINE(a_[k_], (R)GET(i_ + k_)); \
        }                                                                      \
        for (; i_ < hi_; ++i_) a_[0] = COMBINE(a_[0], (R)GET(i_));             \
        for (int k_ = 0; k_ < VPT; ++k_) acc = COMBINE(acc, a_[k_]);           \
    } while (0)
#endif

#define GET_T(i) LOAD(x, i)
#define GET_ACC(i) (x[i])

#if LAYOUT == 2
/* LAYOUT 2 (CPUs): LAYOUT 1's contiguous chunk per work-item, read as NV vectors of VW lanes per
 * step of VPT elements (VW = min(VPT, 16)), into NV independent vector accumulators. Spelled out
 * because PoCL (3.1, LLVM 15) vectorizes neither LAYOUT 1's 16 scalar accumulators of a max (its
 * code is scalar vmaxss) nor the work-item loop around a loop. Only reduce_first reads this way:
 * the partials are few. Vector types and vloadn/vload_halfn are OpenCL C, not the CUDA prelude's,
 * so the spec keeps this layout to CPU devices. */
#  if VPT >= 16
#    define VW 16
#  elif VPT >= 8
#    define VW 8
#  elif VPT >= 4
#    define VW 4
#  else
#    define VW 2
#  endif
#  define NV (VPT / VW)
#  define RV ISTHMUS_CAT(R, VW)
#  if IS_HALF
#    define VLOAD_R(i) ISTHMUS_CAT(vload_half, VW)(0, x + (i))
#  elif IS_BF16
#    define VLOAD_R(i) ISTHMUS_CAT(as_float, VW)(ISTHMUS_CAT(convert_uint, VW)(ISTHMUS_CAT(vload, VW)(0, x + (i))) << 16)
#  else
#    define VLOAD_R(i) ISTHMUS_CAT(convert_, RV)(ISTHMUS_CAT(vload, VW)(0, x + (i)))
#  endif
#  if ISTHMUS_SUM
#    define VCOMBINE(acc, v) ((acc) + (v))
#  elif ACC_IS_FLOAT
#    define VCOMBINE(acc, v) select((acc), (v), ((v) > (acc)) | isnan(v))
#  else
#    define VCOMBINE(acc, v) max((acc), (v))
#  endif
#  define FIRST_ACCUMULATE(acc, n)                                             \
    do {                                                                       \
        CHUNK_BOUNDS(n);                                                       \
        RV a_[NV];                                                             \
        for (int k_ = 0; k_ < NV; ++k_) a_[k_] = (RV)(R_IDENTITY);             \
        for (; i_ + VPT <= hi_; i_ += VPT) {                                   \
            _Pragma("unroll")                                                  \
            for (int k_ = 0; k_ < NV; ++k_) a_[k_] = VCOMBINE(a_[k_], VLOAD_R(i_ + k_ * VW)); \
        }                                                                      \
        for (; i_ < hi_; ++i_) acc = COMBINE(acc, (R)GET_T(i_));               \
        for (int k_ = 1; k_ < NV; ++k_) a_[0] = VCOMBINE(a_[0], a_[k_]);       \
        R l_[VW];                                                              \
        ISTHMUS_CAT(vstore, VW)(a_[0], 0, l_);                                 \
        for (int k_ = 0; k_ < VW; ++k_) acc = COMBINE(acc, l_[k_]);            \
    } while (0)
#else
#  define FIRST_ACCUMULATE(acc, n) GRID_ACCUMULATE(acc, n, GET_T)
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void reduce_first(const long n, __global const T* x, __global R* partial)
{
    __local R sh[WG];
    const int lid = (int)get_local_id(0);
    R acc = R_IDENTITY;
    FIRST_ACCUMULATE(acc, n);
    GROUP_TREE(sh, lid, acc);
    if (lid == 0) partial[get_group_id(0)] = sh[0];
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void reduce_final(const long n, __global const R* x, __global OUT_T* out)
{
    __local R sh[WG];
    const int lid = (int)get_local_id(0);
    R acc = R_IDENTITY;
    GRID_ACCUMULATE(acc, n, GET_ACC);
    GROUP_TREE(sh, lid, acc);
    if (lid == 0) STORE_OUT(out, sh[0]);
}
