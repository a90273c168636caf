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
 *
 * Grid limits: groups along M (dim 1) and batch x ks (dim 2) are walked by a loop over the
 * group id (grid-stride), so the op may launch fewer groups than tiles (CUDA allows 65535
 * along y and z); dim 0 (N) is launched in full.
 *
 * gemm (tiled) scheme: a work-group computes a TM x TN tile of C; it walks K in steps of TK,
 * staging op(A) (as As[TK][TM+4]) and op(B) (Bs[TK][TN+PADB]) in local memory, zero-filled
 * outside the matrices, read from global memory in the order they are stored (coalesced for
 * either transpose); the next K-step is prefetched into registers while the current one is used.
 * Work-item (tx, ty) owns a WPTM x WPTN register block, made of strips of 4 (or WPT if < 4)
 * consecutive rows/columns spaced TM/WPTM*4 (TN/WPTN*4) apart, so that local-memory reads
 * are 16-byte vectors without bank conflicts and C is written in 16-byte runs.
 *
 * Tunables (-D), all powers of two (values, defaults and restrictions: the op's spec,
 * python/isthmus/ops/gemm.py):
 *   VARIANT 0 tiled, 1 split-K, 2 cpu
 *   TM TN TK WPTM WPTN   tile, K-step and register block of gemm
 *   CM CN CV CR          gemm_cpu block: CR blocks of CM rows, CN vectors of CV columns
 * Launch (gemm):  local = (TN/WPTN, TM/WPTM, 1),
 *                 global = (ceil(N/TN)*local0, min(ceil(M/TM), 65535)*local1, min(batch*ks, 65535))
 * Launch (gemm_cpu): local = (1,1,1), global = (ceil(N/(CN*CV)), min(ceil(M/(CM*CR)), 65535), min(batch, 65535))
 */
#ifndef VARIANT
#define VARIANT 0
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef TM
#define TM 128
#endif
#ifndef TN
#define TN 128
#endif
#ifndef TK
#define TK 16
#endif
#ifndef WPTM
#define WPTM 8
#endif
#ifndef WPTN
#define WPTN 8
#endif
#ifndef CM
#define CM 4
#endif
#ifndef CN
#define CN 2
#endif
#ifndef CV
#define CV 8
#endif
#ifndef CR
#define CR 1
#endif

#define NTX (TN / WPTN)              /* work-items along N (local dim 0) */
#define NTY (TM / WPTM)              /* work-items along M (local dim 1) */
#define NT (NTX * NTY)
#define VM (WPTM < 4 ? WPTM : 4)     /* strip height */
#define VN (WPTN < 4 ? WPTN : 4)     /* strip width */
#define PADA 4
#define PADB (TRANS_B ? 4 : 0)       /* Bs is written column-wise when B is transposed */
#define LA ((TM * TK + NT - 1) / NT) /* A elements staged per work-item */
#define LB ((TK * TN + NT - 1) / NT) /* B elements staged per work-item */
#define A_EXACT ((TM * TK) % NT == 0)
#define B_EXACT ((TK * TN) % NT == 0)

#if TM % WPTM != 0 || TN % WPTN != 0
#  error "gemm.cl: TM % WPTM and TN % WPTN must be 0"
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

/* position (row or k, col or k) inside a staged tile of the idx-th element a work-item loads:
 * consecutive idx follow the memory order of the operand, so a warp's loads are contiguous */
#if TRANS_A
#  define A_R(idx) ((idx) % TM)
#  define A_K(idx) ((idx) / TM)
#else
#  define A_R(idx) ((idx) / TK)
#  define A_K(idx) ((idx) % TK)
#endif
#if TRANS_B
#  define B_K(idx) ((idx) % TK)
#  define B_C(idx) ((idx) / TK)
#else
#  define B_K(idx) ((idx) / TN)
#  define B_C(idx) ((idx) % TN)
#endif

/* row (col) inside the tile of register i (j) of work-item ty (tx) */
#define ROW(i, ty) (((i) / VM) * (NTY * VM) + (ty) * VM + ((i) % VM))
#define COL(j, tx) (((j) / VN) * (NTX * VN) + (tx) * VN + ((j) % VN))

__kernel ISTHMUS_LOCAL_SIZE(NTX, NTY, 1)
void gemm(const int M, const int N, const int K,
          const ACC alpha, const ACC beta,
          __global const T* A, __global const T* B, __global T* C,
          const int nbatch, const long sa, const long sb, const long sc,
          const int ks, const int kchunk, __global ACC* P)
{
#if VARIANT != 2  /* compiled only where launched: a CPU compiler spends seconds on each body */
    __local ACC As[TK][TM + PADA] ISTHMUS_ALIGN(16);
    __local ACC Bs[TK][TN + PADB] ISTHMUS_ALIGN(16);

    const int tx = (int)get_local_id(0);
    const int ty = (int)get_local_id(1);
    const int tid = ty * NTX + tx;
    const int n0 = (int)get_group_id(0) * TN;
    const int mtiles = (M + TM - 1) / TM;
    const int read_c = beta != (ACC)0;

#if VARIANT == 1  /* split-K: the K range and the partials exist only in this build */
    const int nz = nbatch * ks;
#else
    const int nz = nbatch;
#endif
    for (int z = (int)get_group_id(2); z < nz; z += (int)get_num_groups(2)) {
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
    for (int mt = (int)get_group_id(1); mt < mtiles; mt += (int)get_num_groups(1)) {
    const int m0 = mt * TM;

    ACC acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; ++i)
#pragma unroll
        for (int j = 0; j < WPTN; ++j) acc[i][j] = (ACC)0;

    ACC ra[LA], rb[LB];

    /* global -> registers for the K-step starting at k0 */
#define FETCH(k0)                                                                   \
    do {                                                                            \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LA; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            const int r = m0 + A_R(idx), k = (k0) + A_K(idx);                       \
            ra[l] = ((A_EXACT || idx < TM * TK) && r < M && k < kend)               \
                  ? OPA(r, k) : (ACC)0;                                             \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LB; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            const int k = (k0) + B_K(idx), c = n0 + B_C(idx);                       \
            rb[l] = ((B_EXACT || idx < TK * TN) && k < kend && c < N)               \
                  ? OPB(k, c) : (ACC)0;                                             \
        }                                                                           \
    } while (0)
    /* registers -> local memory */
#define STAGE()                                                                     \
    do {                                                                            \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LA; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            if (A_EXACT || idx < TM * TK) As[A_K(idx)][A_R(idx)] = ra[l];           \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LB; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            if (B_EXACT || idx < TK * TN) Bs[B_K(idx)][B_C(idx)] = rb[l];           \
        }                                                                           \
    } while (0)

    if (ntiles > 0) {
        FETCH(kbeg);
        STAGE();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = 0; t < ntiles; ++t) {
        const int more = t + 1 < ntiles;
        if (more) FETCH(kbeg + (t + 1) * TK);
#pragma unroll
        for (int k = 0; k < TK; ++k) {
            ACC a[WPTM], b[WPTN];
#pragma unroll
            for (int i = 0; i < WPTM; ++i) a[i] = As[k][ROW(i, ty)];
#pragma unroll
            for (int j = 0; j < WPTN; ++j) b[j] = Bs[k][COL(j, tx)];
#pragma unroll
            for (int i = 0; i < WPTM; ++i)
#pragma unroll
                for (int j = 0; j < WPTN; ++j) acc[i][j] += a[i] * b[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (more) {
            STAGE();
            barrier(CLK_LOCAL_MEM_FENCE);
        }
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
