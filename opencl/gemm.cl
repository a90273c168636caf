/* isthmus: gemm.cl -- C = alpha * op(A) @ op(B) + beta * C, batched, row-major, any M, N, K
 *
 * op(A) is M x K: A itself (stored M x K) or, with -DTRANS_A=1, A.T (A stored K x M).
 * op(B) is K x N: B itself (stored K x N) or, with -DTRANS_B=1, B.T (B stored N x K), so that
 * x @ W.T with row-major weights W needs no transpose kernel.  C is M x N, dense.
 * Batches: entry z of the batch reads A + z*sa, B + z*sb (sb = 0: weights shared by every entry)
 * and writes C + z*sc.  beta == 0: C is not read (it may hold NaN garbage).  K == 0: C = beta*C.
 * dtypes: float double half (half: ACC float, loads/stores through LOAD/STORE).
 *
 * Kernels (every one compiled into every program; the op launches the one VARIANT names):
 *   gemm          tiled, local memory (VARIANT 0); compiled with VARIANT 1 it is the split-K
 *                 variant: K is cut into ks chunks, each group writes ACC partial sums of its
 *                 chunk into P, and gemm_combine adds them up (VARIANT 0 ignores ks and P and
 *                 carries none of that bookkeeping).  Split-K gives a skinny problem
 *                 (M or N small: batch-1..64 inference) enough work-groups to fill the device.
 *   gemm_combine  C = alpha * sum of the ks partials in P + beta * C (after split-K).
 *   gemm_cpu      no local memory, no barriers, one work-item per CM x (CN columns-units) block
 *                 of C with explicit vectors (VARIANT 2): CPU OpenCL (PoCL) gets its speed from
 *                 wide registers and caches, not from work-items sharing local memory.
 *   gemm_rows     GEMV-like (VARIANT 3): a warp per RN columns of C, K split across its lanes,
 *                 every row of A a pass (x @ W.T with a few rows: W is read once).  See below.
 *
 * Grid limits: built with -DGRID_LOOP=1 (the op does so only when the grid would exceed CUDA's
 * 65535 groups along y or z), gemm walks its M tiles (dim 1) and batch x ks entries (dim 2) in a
 * loop over the group id; without it, a group computes exactly one tile and carries no loop.
 * gemm_rows has no such build (see below: the op launches gemm there instead); gemm_cpu always walks them (it has no barriers, the loop is cheap); dim 0 (N) is launched in full.
 *
 * gemm (tiled) scheme: a work-group computes a TM x TN tile of C; it walks K in steps of TK,
 * staging op(A) (as As[TK][TM+4]) and op(B) (Bs[TK][TN+PADB]) in two local-memory buffers, zero-
 * filled outside the matrices, read from global memory in the order they are stored (coalesced
 * for either transpose) as quads, 4 elements adjacent in memory, each one 16-byte load when it
 * lies inside the matrices and aligned (float); the next K-step is fetched into registers while
 * the current one is used and staged into the other buffer, so a K-step costs one barrier.
 * Work-item (tx, ty) owns a WPTM x WPTN register block, made of strips of 4 (or WPT if < 4)
 * consecutive rows/columns spaced TM/WPTM*4 (TN/WPTN*4) apart, so that local-memory reads
 * are 16-byte vectors without bank conflicts and C is written in 16-byte runs.  On CUDA groups of
 * 64-256 work-items get __launch_bounds__ for 512/NT groups a multiprocessor (128 registers: two
 * groups of 256 work-items instead of one at 183 registers; with the 16-byte loads and the second
 * buffer, 4096^3 went from 34 to 44 TFLOP/s on the H200).
 *
 * Tunables (-D), all powers of two (values, defaults and restrictions: the op's spec,
 * python/isthmus/ops/specs/gemm.py):
 *   VARIANT 0 tiled, 1 split-K, 2 cpu, 3 rows
 *   TM TN TK WPTM WPTN   tile, K-step and register block of gemm
 *   VLD                  1: a quad of an operand inside the matrices is one 16-byte load (where
 *                        aligned); 0: element by element
 *   CM CN CV CR          gemm_cpu block: CR blocks of CM rows, CN vectors of CV columns
 *   RM RN RW             gemm_rows: RM rows a pass, RN columns a warp, RW warps a group
 * Launch (gemm):  local = (TN/WPTN, TM/WPTM, 1),
 *                 global = (ceil(N/TN)*local0, min(ceil(M/TM), 65535)*local1, min(batch*ks, 65535))
 * Launch (gemm_cpu): local = (1,1,1), global = (ceil(N/(CN*CV)), min(ceil(M/(CM*CR)), 65535), min(batch, 65535))
 * Launch (gemm_rows): local = (32*RW,1,1), global = (ceil(N/(RW*RN))*32*RW, min(ceil(M/RM), 65535), min(batch, 65535))
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(CM) || !defined(CN) || !defined(CR) || !defined(CV) || !defined(RM) || !defined(RN) || \
    !defined(RW) || !defined(TK) || !defined(TM) || !defined(TN) || !defined(VARIANT) || \
    !defined(VLD) || !defined(WPTM) || !defined(WPTN)
#  error "gemm.cl: build it through its op, which passes every tunable (-D)"
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef GRID_LOOP
#define GRID_LOOP 0
#endif

#define NTX (TN / WPTN)              /* work-items along N (local dim 0) */
#define NTY (TM / WPTM)              /* work-items along M (local dim 1) */
#define NT (NTX * NTY)
#define VM (WPTM < 4 ? WPTM : 4)     /* strip height */
#define VN (WPTN < 4 ? WPTN : 4)     /* strip width */
#define PADA 4
#define PADB (TRANS_B ? 4 : 0)       /* Bs is written column-wise when B is transposed */
#define QA (TM * TK / 4)             /* quads (4 elements adjacent in memory) of an A tile */
#define QB (TK * TN / 4)
#define LQA ((QA + NT - 1) / NT)     /* quads staged per work-item */
#define LQB ((QB + NT - 1) / NT)
#define QA_EXACT (QA % NT == 0)
#define QB_EXACT (QB % NT == 0)
/* 16-byte global loads: float only (half and double take the element-wise path of a quad) */
#define VEC4 (T_ID == ISTHMUS_ID_float)

#if TM % WPTM != 0 || TN % WPTN != 0
#  error "gemm.cl: TM % WPTM and TN % WPTN must be 0"
#endif

/* 512 work-items per multiprocessor at least (CUDA: at most 128 registers): at 256 work-items a
 * group holds only 8 warps, and one group alone idles the SM at every barrier. Groups under 64
 * work-items (tuner corners) keep their registers. */
#if defined(ISTHMUS_CUDA) && NT >= 64 && NT <= 256
#  define GEMM_BOUNDS __launch_bounds__(NT, 512 / NT)
#else
#  define GEMM_BOUNDS ISTHMUS_LOCAL_SIZE(NTX, NTY, 1)
#endif

/* element (r, k) of op(A) and (k, c) of op(B) in one batch entry (Ab, Bb) */
#if TRANS_A
#  define OPA(r, k) LOAD(Ab, (size_t)(k) * (size_t)M + (size_t)(r))
#else
#  define OPA(r, k) LOAD(Ab, (size_t)(r) * (size_t)K + (size_t)(k))
#endif
#if TRANS_B
#  define OPB(k, c) LOAD(Bb, (size_t)(c) * (size_t)K + (size_t)(k))
#else
#  define OPB(k, c) LOAD(Bb, (size_t)(k) * (size_t)N + (size_t)(c))
#endif

/* the q-th quad of a staged tile: 4 elements adjacent in the operand's memory order (along k for
 * A, along c for B when the operand is not transposed, the other way when it is), so that a
 * warp's loads are contiguous 16-byte vectors. QA_R/QA_K: its first element's (row, k) in the
 * tile; QA_DR/QA_DK: the step from one of its elements to the next. */
#if TRANS_A
#  define QA_R(q) (((q) % (TM / 4)) * 4)
#  define QA_K(q) ((q) / (TM / 4))
#  define QA_DR 1
#  define QA_DK 0
#else
#  define QA_R(q) ((q) / (TK / 4))
#  define QA_K(q) (((q) % (TK / 4)) * 4)
#  define QA_DR 0
#  define QA_DK 1
#endif
#if TRANS_B
#  define QB_K(q) (((q) % (TK / 4)) * 4)
#  define QB_C(q) ((q) / (TK / 4))
#  define QB_DK 1
#  define QB_DC 0
#else
#  define QB_K(q) ((q) / (TN / 4))
#  define QB_C(q) (((q) % (TN / 4)) * 4)
#  define QB_DK 0
#  define QB_DC 1
#endif

/* row (col) inside the tile of register i (j) of work-item ty (tx) */
#define ROW(i, ty) (((i) / VM) * (NTY * VM) + (ty) * VM + ((i) % VM))
#define COL(j, tx) (((j) / VN) * (NTX * VN) + (tx) * VN + ((j) % VN))

/* 4 elements at p as ACC, into dst[0..3]: one 16-byte load (p 16-byte aligned) */
#define LOAD4(dst, p)                                                               \
    do {                                                                            \
        const float4 v4_ = *(const __global float4*)(p);                            \
        (dst)[0] = v4_.x; (dst)[1] = v4_.y; (dst)[2] = v4_.z; (dst)[3] = v4_.w;     \
    } while (0)

__kernel GEMM_BOUNDS
void gemm(const int M, const int N, const int K,
          const ACC alpha, const ACC beta,
          __global const T* A, __global const T* B, __global T* C,
          const int nbatch, const long sa, const long sb, const long sc,
          const int ks, const int kchunk, __global ACC* P)
{
#if VARIANT == 0 || VARIANT == 1  /* compiled only where launched: a CPU compiler spends seconds on each body */
    /* two buffers: the next K-step is staged into one while the other is read (one barrier a step) */
    __local ACC As[2][TK][TM + PADA] ISTHMUS_ALIGN(16);
    __local ACC Bs[2][TK][TN + PADB] ISTHMUS_ALIGN(16);

    const int tx = (int)get_local_id(0);
    const int ty = (int)get_local_id(1);
    const int tid = ty * NTX + tx;
    const int n0 = (int)get_group_id(0) * TN;
    const int read_c = beta != (ACC)0;
    /* whole quads as one 16-byte load: the operand 16-byte aligned and its rows a multiple of 4 long
     * (a batch stride is a multiple of the row length, so every entry stays aligned) */
    const int vec_a = VLD && VEC4 && ((size_t)A % 16) == 0 && (TRANS_A ? M : K) % 4 == 0;
    const int vec_b = VLD && VEC4 && ((size_t)B % 16) == 0 && (TRANS_B ? K : N) % 4 == 0;

#if GRID_LOOP  /* more M tiles or batch entries than the grid holds (CUDA: 65535 along y and z) */
#  if VARIANT == 1  /* split-K: the K range and the partials exist only in this build */
    const int nz = nbatch * ks;
#  else
    const int nz = nbatch;
#  endif
    const int mtiles = (M + TM - 1) / TM;
    for (int z = (int)get_group_id(2); z < nz; z += (int)get_num_groups(2)) {
    for (int mt = (int)get_group_id(1); mt < mtiles; mt += (int)get_num_groups(1)) {
#else
    {
    const int z = (int)get_group_id(2);
    const int mt = (int)get_group_id(1);
    {
#endif
#if VARIANT == 1
    const int bz = z % nbatch, split = z / nbatch;
    const int kbeg = split * kchunk;
    const int kend = min(K, kbeg + kchunk);
#else
    const int bz = z;
    const int kbeg = 0;
    const int kend = K;
#endif
    __global const T* Ab = A + (size_t)bz * (size_t)sa;
    __global const T* Bb = B + (size_t)bz * (size_t)sb;
    const int ntiles = kend > kbeg ? (kend - kbeg + TK - 1) / TK : 0;
    const int m0 = mt * TM;

    ACC acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; ++i)
#pragma unroll
        for (int j = 0; j < WPTN; ++j) acc[i][j] = (ACC)0;

    ACC ra[LQA * 4], rb[LQB * 4];

    /* global -> registers for the K-step starting at k0: a quad inside the matrices (and inside
     * this split's K range, whose bounds are multiples of TK) is one vector load where aligned;
     * other quads go element by element, zero outside */
#define FETCH(k0)                                                                   \
    do {                                                                            \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LQA; ++l) {                                             \
            const int q = tid + l * NT;                                             \
            if (QA_EXACT || q < QA) {                                               \
                const int r = m0 + QA_R(q), k = (k0) + QA_K(q);                     \
                if (vec_a && r + 3 * QA_DR < M && k + 3 * QA_DK < kend) {           \
                    LOAD4(ra + 4 * l, TRANS_A ? Ab + (size_t)k * (size_t)M + r      \
                                              : Ab + (size_t)r * (size_t)K + k);    \
                } else {                                                            \
                    _Pragma("unroll")                                               \
                    for (int e = 0; e < 4; ++e) {                                   \
                        const int re = r + e * QA_DR, ke = k + e * QA_DK;           \
                        ra[4 * l + e] = (re < M && ke < kend) ? OPA(re, ke) : (ACC)0; \
                    }                                                               \
                }                                                                   \
            }                                                                       \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LQB; ++l) {                                             \
            const int q = tid + l * NT;                                             \
            if (QB_EXACT || q < QB) {                                               \
                const int k = (k0) + QB_K(q), c = n0 + QB_C(q);                     \
                if (vec_b && c + 3 * QB_DC < N && k + 3 * QB_DK < kend) {           \
                    LOAD4(rb + 4 * l, TRANS_B ? Bb + (size_t)c * (size_t)K + k      \
                                              : Bb + (size_t)k * (size_t)N + c);    \
                } else {                                                            \
                    _Pragma("unroll")                                               \
                    for (int e = 0; e < 4; ++e) {                                   \
                        const int ke = k + e * QB_DK, ce = c + e * QB_DC;           \
                        rb[4 * l + e] = (ke < kend && ce < N) ? OPB(ke, ce) : (ACC)0; \
                    }                                                               \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    } while (0)
    /* registers -> local buffer s */
#define STAGE(s)                                                                    \
    do {                                                                            \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LQA; ++l) {                                             \
            const int q = tid + l * NT;                                             \
            if (QA_EXACT || q < QA) {                                               \
                _Pragma("unroll")                                                   \
                for (int e = 0; e < 4; ++e)                                         \
                    As[s][QA_K(q) + e * QA_DK][QA_R(q) + e * QA_DR] = ra[4 * l + e]; \
            }                                                                       \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LQB; ++l) {                                             \
            const int q = tid + l * NT;                                             \
            if (QB_EXACT || q < QB) {                                               \
                _Pragma("unroll")                                                   \
                for (int e = 0; e < 4; ++e)                                         \
                    Bs[s][QB_K(q) + e * QB_DK][QB_C(q) + e * QB_DC] = rb[4 * l + e]; \
            }                                                                       \
        }                                                                           \
    } while (0)

    if (ntiles > 0) {
        FETCH(kbeg);
        STAGE(0);
    }
    /* unconditional (every work-item of the group reaches it): inside the if, PoCL 5.0's loopvec
       work-group method miscompiled x @ W.T with split-K where fewer A quads than work-items are
       staged (TM16 TN64 W2x4 TK16 KS8: wrong results changing from run to run, issue 26 item 7;
       benchmarks/results/runs/2026-12-04-gemm-pocl5) */
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        const int more = t + 1 < ntiles;
        if (more) FETCH(kbeg + (t + 1) * TK);
#pragma unroll
        for (int k = 0; k < TK; ++k) {
            ACC a[WPTM], b[WPTN];
#pragma unroll
            for (int i = 0; i < WPTM; ++i) a[i] = As[cur][k][ROW(i, ty)];
#pragma unroll
            for (int j = 0; j < WPTN; ++j) b[j] = Bs[cur][k][COL(j, tx)];
#pragma unroll
            for (int i = 0; i < WPTM; ++i)
#pragma unroll
                for (int j = 0; j < WPTN; ++j) acc[i][j] += a[i] * b[j];
        }
        /* the other buffer was last read before the previous barrier: free to fill now */
        if (more) STAGE(cur ^ 1);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#undef FETCH
#undef STAGE

    /* epilogue: the result, or (split-K) this chunk's partial sums */
    const size_t cbase = (size_t)bz * (size_t)sc;
#if VARIANT == 1
    const size_t pbase = ((size_t)split * (size_t)nbatch + (size_t)bz) * (size_t)M * (size_t)N;
#endif
#pragma unroll
    for (int i = 0; i < WPTM; ++i) {
        const int r = m0 + ROW(i, ty);
        if (r < M) {
#pragma unroll
            for (int j = 0; j < WPTN; ++j) {
                const int c = n0 + COL(j, tx);
                if (c < N) {
                    const size_t o = (size_t)r * (size_t)N + (size_t)c;
#if VARIANT == 1
                    P[pbase + o] = acc[i][j];
#else
                    ACC v = alpha * acc[i][j];
                    if (read_c) v += beta * LOAD(C, cbase + o);
                    STORE(C, cbase + o, v);
#endif
                }
            }
        }
    }
    }  /* mt */
    }  /* z */
#endif
}

/* ---- gemm_rows (VARIANT 3): few rows (M <= 64 or so: batch-1..64 inference), GEMV-like -------
 * A work-group of RW warps of 32 work-items; each warp owns RN columns of C and every row of it, RM
 * rows a pass. Its 32 lanes split K: lane l takes the quads l, l+32, ... of K, so a warp reads 512
 * contiguous bytes of a row of B.T (x @ W.T: W stored N x K) per load and every element of B is
 * read once per pass; A's rows (a few KB each) come from the caches. Each lane keeps RM x RN
 * partial sums, and the 32 partials of each output are added up through local memory (padded rows:
 * no bank conflicts). No split-K partials, no second launch. Other layouts and dtypes take the
 * element-wise path of the same loop (correct, strided where B is not transposed).
 * A group computes one pass (dim 1) of one batch entry (dim 2), and no loop holds its barrier: PoCL
 * 5.0 (LLVM 16) aborts compiling a barrier in a loop behind a data-dependent branch, as this
 * variant's K loop is (Kernel.cc:129 "region_entry_barrier != NULL", pocl issue 1435). So there is
 * no GRID_LOOP build of it: past 65535 passes or batch entries the op launches the tiled kernel.
 * Launch: local = (32*RW, 1, 1), global = (ceil(N/(RW*RN))*32*RW, min(ceil(M/RM), 65535), min(batch, 65535)). */
#define RLANES 32
#define ROUT (RM * RN)

__kernel ISTHMUS_LOCAL_SIZE(RLANES * RW, 1, 1)
void gemm_rows(const int M, const int N, const int K,
               const ACC alpha, const ACC beta,
               __global const T* A, __global const T* B, __global T* C,
               const int nbatch, const long sa, const long sb, const long sc)
{
#if VARIANT == 3  /* compiled only where launched */
    __local ACC red[RW][RLANES][ROUT + 1];
    const int lid = (int)get_local_id(0);
    const int lane = lid % RLANES, w = lid / RLANES;
    const int c0 = (int)get_group_id(0) * (RW * RN) + w * RN;
    const int read_c = beta != (ACC)0;
    /* x @ W.T in float, aligned rows of a multiple of 4: quads as 16-byte loads */
    const int vec = VEC4 && !TRANS_A && TRANS_B && K % 4 == 0 && ((size_t)A % 16) == 0 && ((size_t)B % 16) == 0;
    const int bz = (int)get_group_id(2);
    const int pass = (int)get_group_id(1);
    __global const T* Ab = A + (size_t)bz * (size_t)sa;
    __global const T* Bb = B + (size_t)bz * (size_t)sb;
    __global T* Cb = C + (size_t)bz * (size_t)sc;
    const int m0 = pass * RM;
    ACC acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] = (ACC)0;
    /* rows and columns past the matrix are clamped for the loads and never stored */
    int rows[RM], cols[RN];
#pragma unroll
    for (int i = 0; i < RM; ++i) rows[i] = min(m0 + i, M - 1);
#pragma unroll
    for (int j = 0; j < RN; ++j) cols[j] = min(c0 + j, N - 1);
    if (vec) {
        const int kq = K / 4;
#pragma unroll 2
        for (int q = lane; q < kq; q += RLANES) {
            ACC b[RN][4];
#pragma unroll
            for (int j = 0; j < RN; ++j) LOAD4(b[j], Bb + (size_t)cols[j] * (size_t)K + 4 * q);
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                ACC a[4];
                LOAD4(a, Ab + (size_t)rows[i] * (size_t)K + 4 * q);
#pragma unroll
                for (int j = 0; j < RN; ++j)
                    acc[i][j] += a[0] * b[j][0] + a[1] * b[j][1] + a[2] * b[j][2] + a[3] * b[j][3];
            }
        }
    } else {
        for (int k = lane; k < K; k += RLANES) {
            ACC b[RN];
#pragma unroll
            for (int j = 0; j < RN; ++j) b[j] = OPB(k, cols[j]);
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                const ACC a = OPA(rows[i], k);
#pragma unroll
                for (int j = 0; j < RN; ++j) acc[i][j] += a * b[j];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) red[w][lane][i * RN + j] = acc[i][j];
    barrier(CLK_LOCAL_MEM_FENCE);
    /* lane o adds up output o of its warp (o < RM*RN) over the 32 lanes */
    for (int o = lane; o < ROUT; o += RLANES) {
        ACC s = (ACC)0;
        for (int l = 0; l < RLANES; ++l) s += red[w][l][o];
        const int r = m0 + o / RN, c = c0 + o % RN;
        if (r < M && c < N) {
            const size_t off = (size_t)r * (size_t)N + (size_t)c;
            ACC v = alpha * s;
            if (read_c) v += beta * LOAD(Cb, off);
            STORE(Cb, off, v);
        }
    }
#endif
}

/* C[i] = alpha * (P[i] + P[total + i] + ... ks partials) + beta * C[i], i < total (= batch*M*N) */
__kernel void gemm_combine(const long total, const int ks, const ACC alpha, const ACC beta,
                           __global const ACC* P, __global T* C)
{
    const int read_c = beta != (ACC)0;
    for (size_t i = get_global_id(0); i < (size_t)total; i += get_global_size(0)) {
        ACC s = (ACC)0;
        for (int j = 0; j < ks; ++j) s += P[(size_t)j * (size_t)total + i];
        ACC v = alpha * s;
        if (read_c) v += beta * LOAD(C, i);
        STORE(C, i, v);
    }
}

/* ---- gemm_cpu ------------------------------------------------------------------------------
 * One work-item (a work-group of one) computes a CROWS x CCOLS block of C: CR blocks of CM rows,
 * CN vectors of CV columns.  K is walked in chunks of KC: each chunk of op(B) (KC x CCOLS) is
 * first packed into a private, contiguous array (zero-filled past N; transposed here when B is
 * stored N x K), then every row block runs over it with CM x CN vector accumulators in
 * registers: per k, CN vector loads of the packed panel and CM broadcast scalars of op(A), CM*CN
 * vector multiply-adds (the outer-product form of BLAS micro-kernels).  Packing matters on a
 * CPU: the rows of B are N elements apart, and walking them directly touches a new page per k.
 * Rows past M are clamped for the loads and never stored.  half computes in float vectors
 * (vload_halfN); CUDA takes a scalar path (correct for every shape; only CPU devices launch this
 * variant by default). */
#define CCOLS (CN * CV)
#define CROWS (CM * CR)
#define KC (4096 / CCOLS < 16 ? 16 : 4096 / CCOLS)
#define ASTEP (TRANS_A ? (size_t)M : (size_t)1)
#if defined(__OPENCL_VERSION__)
#  define CPU_VECTORS 1
#  define VT ISTHMUS_CAT(ACC, CV)
#  if IS_HALF  /* vectors of float, loaded from and stored to half */
#    define VLOAD ISTHMUS_CAT(vload_half, CV)
#    define VSTORE ISTHMUS_CAT(vstore_half, CV)
#  else
#    define VLOAD ISTHMUS_CAT(vload, CV)
#    define VSTORE ISTHMUS_CAT(vstore, CV)
#  endif
#  define VSTORE_ACC ISTHMUS_CAT(vstore, CV)
#else
#  define CPU_VECTORS 0
#endif

__kernel ISTHMUS_LOCAL_SIZE(1, 1, 1)
void gemm_cpu(const int M, const int N, const int K,
              const ACC alpha, const ACC beta,
              __global const T* A, __global const T* B, __global T* C,
              const int nbatch, const long sa, const long sb, const long sc)
{
#if VARIANT == 2  /* compiled only where launched */
    const int n0 = (int)get_group_id(0) * CCOLS;
    const int mtiles = (M + CROWS - 1) / CROWS;
    const int read_c = beta != (ACC)0;
    for (int bz = (int)get_group_id(2); bz < nbatch; bz += (int)get_num_groups(2)) {
    __global const T* Ab = A + (size_t)bz * (size_t)sa;
    __global const T* Bb = B + (size_t)bz * (size_t)sb;
    __global T* Cb = C + (size_t)bz * (size_t)sc;
    for (int mt = (int)get_group_id(1); mt < mtiles; mt += (int)get_num_groups(1)) {
    const int m0 = mt * CROWS;
#if CPU_VECTORS
    VT acc[CR][CM][CN];
    VT Bp[KC][CN];
    for (int rb = 0; rb < CR; ++rb)
#pragma unroll
        for (int i = 0; i < CM; ++i)
#pragma unroll
            for (int q = 0; q < CN; ++q) acc[rb][i][q] = (VT)(0);
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = min(KC, K - k0);
        if (!TRANS_B && n0 + CCOLS <= N) {
            for (int kk = 0; kk < kc; ++kk)
#pragma unroll
                for (int q = 0; q < CN; ++q)
                    Bp[kk][q] = VLOAD(0, Bb + (size_t)(k0 + kk) * (size_t)N + (size_t)(n0 + q * CV));
        } else {
            __private ACC* bp = (__private ACC*)Bp;
            for (int j = 0; j < CCOLS; ++j) {
                const int c = n0 + j;
                for (int kk = 0; kk < kc; ++kk) bp[kk * CCOLS + j] = c < N ? OPB(k0 + kk, c) : (ACC)0;
            }
        }
        for (int rb = 0; rb < CR; ++rb) {
            /* op(A)(row, k) = arow[i][k * ASTEP]: the addresses are worked out once per block */
            __global const T* arow[CM];
#pragma unroll
            for (int i = 0; i < CM; ++i) {
                const size_t row = (size_t)min(m0 + rb * CM + i, M - 1);
                arow[i] = Ab + (TRANS_A ? row : row * (size_t)K) + (size_t)k0 * ASTEP;
            }
            VT r[CM][CN];
#pragma unroll
            for (int i = 0; i < CM; ++i)
#pragma unroll
                for (int q = 0; q < CN; ++q) r[i][q] = acc[rb][i][q];
            for (int kk = 0; kk < kc; ++kk) {
                VT b[CN];
#pragma unroll
                for (int q = 0; q < CN; ++q) b[q] = Bp[kk][q];
#pragma unroll
                for (int i = 0; i < CM; ++i) {
                    const VT a = (VT)(LOAD(arow[i], (size_t)kk * ASTEP));
#pragma unroll
                    for (int q = 0; q < CN; ++q) r[i][q] = fma(a, b[q], r[i][q]);  /* fma: PoCL does not fuse a mad */
                }
            }
#pragma unroll
            for (int i = 0; i < CM; ++i)
#pragma unroll
                for (int q = 0; q < CN; ++q) acc[rb][i][q] = r[i][q];
        }
    }
    for (int rb = 0; rb < CR; ++rb)
        for (int i = 0; i < CM; ++i) {
            const int row = m0 + rb * CM + i;
            if (row >= M) break;
            for (int q = 0; q < CN; ++q) {
                const int c = n0 + q * CV;
                const size_t o = (size_t)row * (size_t)N + (size_t)c;
                VT v = (VT)(alpha) * acc[rb][i][q];
                if (c + CV <= N) {
                    if (read_c) v += (VT)(beta) * VLOAD(0, Cb + o);
                    VSTORE(v, 0, Cb + o);
                } else {
                    ACC lanes[CV];
                    VSTORE_ACC(v, 0, lanes);
                    for (int l = 0; l < CV && c + l < N; ++l) {
                        ACC w = lanes[l];
                        if (read_c) w += beta * LOAD(Cb, o + l);
                        STORE(Cb, o + l, w);
                    }
                }
            }
        }
#else
    /* scalar path: any block, any layout */
    for (int i = 0; i < CROWS; ++i) {
        const int r = m0 + i;
        if (r >= M) break;
        for (int j = 0; j < CCOLS; ++j) {
            const int c = n0 + j;
            if (c >= N) break;
            ACC s = (ACC)0;
            for (int k = 0; k < K; ++k) s += OPA(r, k) * OPB(k, c);
            const size_t o = (size_t)r * (size_t)N + (size_t)c;
            ACC v = alpha * s;
            if (read_c) v += beta * LOAD(Cb, o);
            STORE(Cb, o, v);
        }
    }
#endif
    }  /* mt */
    }  /* bz */
#endif
}
