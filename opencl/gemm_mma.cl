/* isthmus: gemm_mma.cl -- tensor-core gemm for 16-bit floats (float16, bfloat16), f32 accumulation
 *
 *   C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]      op(X) = X or X^T (TRANS_A, TRANS_B)
 *
 * Kernel:
 *   __kernel void gemm_mma(const int M, const int N, const int K, const float alpha, const float beta,
 *                          __global const T* A, const long sa, __global const T* B, const long sb,
 *                          __global CT* C, const long sc)
 * T is ushort (16-bit patterns of float16 or bfloat16: IS_BF16 says which); CT is float (C_F32=1)
 * or ushort (C in the input dtype, rounded to nearest even). Row-major, dense:
 *   A: M x K (TRANS_A=0) or K x M (TRANS_A=1);  B: K x N (TRANS_B=0) or N x K (TRANS_B=1);  C: M x N.
 * Batch b = get_group_id(2) starts at A + b*sa, B + b*sb, C + b*sc (sa or sb 0: shared operand).
 * beta == 0: C is not read (it may hold NaN garbage).  K == 0: C = beta*C (or 0).
 * SPLITK > 1 (problems with few tiles and a long K): group z of the grid is split z % SPLITK of
 * batch z / SPLITK; it multiplies its chunk of K (whole K-steps, chunks past K give zeros) and
 * writes the f32 partial product to C + z*sc (C is then float workspace, alpha 1, beta 0);
 *   __kernel void gemm_mma_combine(const long mn, const int batch, const float alpha,
 *                                  const float beta, __global const float* P, __global CT* C)
 * adds the SPLITK partials of each element into C = alpha * sum + beta * C.
 *
 * Scheme: a work-group of WM x WN warps (32 work-items each) computes a BM x BN tile of C, walking
 * K in steps of BK through a ring of STAGES tiles in local memory, each kept in the operand's own
 * global layout (k-contiguous or m/n-contiguous rows; SWZ=0 pads each row by 8 elements against
 * bank conflicts, SWZ=1 permutes its 16-byte chunks instead and needs no padding).
 * Each warp owns a (BM/WM) x (BN/WN) block of C as m16n8k16 accumulator fragments (f32):
 * lane l (g = l/4, t = l%4) holds rows g and g+8, columns 2t and 2t+1 of each 16x8 fragment.
 *   MMA_PTX=1 (CUDA, NVIDIA OpenCL): fragments through inline PTX `mma.sync.aligned.m16n8k16`;
 *     LDSM=1 loads them with `ldmatrix` (.trans for m/n-contiguous tiles), else with 16-bit reads;
 *     ASYNC=1 (needs VEC) copies global -> local with `cp.async` (16 bytes, zero-filled outside the
 *     matrix), so STAGES-1 K-steps are in flight while one is multiplied; the fragments of the
 *     next k16 step are read from local memory while the current one multiplies (PIPE=1: one
 *     barrier per K-step, before its last k16 step; PIPE=0: a barrier at the top of each K-step,
 *     each k16 step loads its fragments, then multiplies).
 *   DYN_SMEM=1 (CUDA only): the ring is dynamic shared memory, SMEM_ELEMS * 2 bytes given at
 *     launch (the host raises the kernel's limit past 48 KiB: deeper rings, bigger tiles).
 *     DYN_SMEM=0: static __local arrays, each on a 128-byte boundary (up to 128 bytes more than
 *     the ring: NVIDIA's OpenCL starts local arrays 16 bytes past one, and there every swizzled
 *     ring ran 25-30% slower until aligned; NVIDIA's OpenCL takes static arrays past 48 KiB).
 *   WGMMA=1 (CUDA on sm_90a, with DYN_SMEM): Hopper's warpgroup MMA (`wgmma.mma_async`, m64nBNk16)
 *     reads both operands straight from local memory. Each warpgroup (4 warps) owns 64 rows x BN
 *     columns of C (WN=1, WM=BM/16: warp w's accumulators are rows 16w.. as with mma.sync), BK=64,
 *     and tiles are stored as wgmma's 128-byte swizzle atoms (panels of 64 columns, the 16-byte chunk
 *     c of row r at chunk c ^ (r % 8); the ring starts on a 1024-byte boundary). One K-step's four
 *     k16 steps are one wgmma group; the group of the previous K-step may still run while this one
 *     is issued, so copies run STAGES-2 K-steps ahead (the stage they overwrite was read two groups
 *     before, and every warpgroup has waited for that group before the K-step's barrier).
 *   MMA_PTX=0 (every other device): the same tiles, ring and fragment ownership; each work-item
 *     computes its fragment elements with f32 multiply-adds (portable OpenCL C, no extension).
 *   VEC=1 (host-chosen when every operand's contiguous dimension is a multiple of 8): 16-byte
 *     copies; VEC=0 copies element by element with bounds checks (odd sizes).
 * Work-groups are numbered in groups of GM tile rows (L2 reuse of B across neighbouring tiles).
 *
 * ROWS=1 (x @ W.T with a few rows): a kernel of the same name and arguments without the tile ring,
 *   streaming W from global memory (see "ROWS=1" below); tunables RM RN RK RU (and SPLITK).
 * Tunables (-D): ROWS, BM BN (tile), BK (K-step, multiple of 16), WM WN (warps), STAGES (>= 2), GM,
 *   LDSM, ASYNC, SWZ, PIPE, WGMMA, SPLITK, RM RN RK RU RP; their values, defaults and restrictions are declared once, in the op's
 *   spec (python/isthmus/ops/specs/gemm_mma.py). Local memory is static everywhere but on CUDA with
 *   DYN_SMEM=1, where the opt-in maximum applies.
 * Launch (3-D): local = (32*WM*WN, 1, 1),
 *   global = (ceil(N/BN) * 32*WM*WN, ceil(M/BM), batch)   (CUDA: ceil(M/BM), batch <= 65535)
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(ASYNC) || !defined(BK) || !defined(BM) || !defined(BN) || !defined(GM) || \
    !defined(LDSM) || !defined(PIPE) || !defined(SPLITK) || !defined(STAGES) || !defined(SWZ) || \
    !defined(WGMMA) || !defined(WM) || !defined(WN) || !defined(ROWS) || !defined(RM) || !defined(RN) || \
    !defined(RK) || !defined(RU) || !defined(RP)
#  error "gemm_mma.cl: build it through its op, which passes every tunable (-D)"
#endif
#ifndef DYN_SMEM
#define DYN_SMEM 0
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef C_F32
#define C_F32 1
#endif
#ifndef MMA_PTX
#define MMA_PTX 0
#endif
#if C_F32
#define CT float
#else
#define CT ushort
#endif
#if SPLITK > 1  /* gemm_mma writes f32 partial products; gemm_mma_combine writes C */
#  define PT float
#else
#  define PT CT
#endif

/* K-steps whose copies are in flight ahead of the one multiplied (WGMMA: one stage more is still
 * being read by the previous K-step's wgmma group) */
#if WGMMA
#  define AHEAD (STAGES - 2)
#else
#  define AHEAD (STAGES - 1)
#endif
#define NT (WM * WN * 32)
#define WTM (BM / WM)      /* rows of C per warp */
#define WTN (BN / WN)      /* cols of C per warp */
#define MI (WTM / 16)      /* 16-row fragments per warp */
#define NI (WTN / 8)       /* 8-col fragments per warp */

#if BM % (16 * WM) != 0 || BN % (16 * WN) != 0 || (BK != 16 && BK != 32 && BK != 64) || STAGES < 2
#  error "gemm_mma.cl: BM % (16*WM), BN % (16*WN) must be 0, BK 16, 32 or 64, and STAGES >= 2"
#endif
#if WGMMA && (!MMA_PTX || !DYN_SMEM || BK != 64 || WN != 1 || WM * 16 != BM || BM % 64 != 0 \
              || (BN != 64 && BN != 128 && BN != 256) || STAGES < 3)
#  error "gemm_mma.cl: WGMMA needs MMA_PTX, DYN_SMEM, BK=64, WN=1, WM=BM/16 (BM a multiple of 64), BN 64/128/256, STAGES >= 3"
#endif

/* local tiles: [rows][cols] in the operand's global layout. SWZ=0: each row padded by 8 elements
 * (16 bytes) so that the 8 rows one ldmatrix phase reads fall in distinct banks. SWZ=1: no padding
 * (a fifth less local memory at BK=32, so one more stage fits); instead the 16-byte chunks of a row
 * are permuted (chunk XOR a function of the row), which spreads any 8 consecutive rows of one
 * chunk column over the 8 distinct 16-byte slots of a 128-byte bank line. */
#if TRANS_A
#  define A_ROWS BK
#  define A_COLS BM
#else
#  define A_ROWS BM
#  define A_COLS BK
#endif
#if TRANS_B
#  define B_ROWS BN
#  define B_COLS BK
#else
#  define B_ROWS BK
#  define B_COLS BN
#endif
#if WGMMA
/* wgmma's 128-byte swizzle: panels of 64 columns (128 bytes) x the tile's rows; an m/n-contiguous
 * tile (the only kind wider than 64 columns) has BK rows, so panels are BK * 64 elements apart */
#  define AP A_COLS
#  define BP B_COLS
#  define TILE_OFF(r, c, COLS) (((c) >> 6) * (BK * 64) + (r) * 64 + (((((c) >> 3) & 7) ^ ((r) & 7)) << 3) + ((c) & 7))
#elif SWZ
#  define AP A_COLS
#  define BP B_COLS
/* rows sharing a 128-byte line (COLS/8 chunks each): the XOR term changes every 8/(COLS/8) rows */
#  define SWZ_F(r, COLS) (((COLS) >= 64 ? (r) : (COLS) == 32 ? ((r) >> 1) : ((r) >> 2)) & ((COLS) >= 64 ? 7 : (COLS) / 8 - 1))
#  define TILE_OFF(r, c, COLS) ((r) * (COLS) + (((((c) >> 3) ^ SWZ_F(r, COLS))) << 3) + ((c) & 7))
#else
#  define AP (A_COLS + 8)
#  define BP (B_COLS + 8)
#  define TILE_OFF(r, c, COLS) ((r) * ((COLS) + 8) + (c))
#endif
#define A_OFF(r, c) TILE_OFF(r, c, A_COLS)
#define B_OFF(r, c) TILE_OFF(r, c, B_COLS)
#define A_STAGE (A_ROWS * AP)
#define B_STAGE (B_ROWS * BP)
#define SMEM_ELEMS (STAGES * (A_STAGE + B_STAGE))
/* element (m, k) of op(A) and (k, n) of op(B) inside one local stage */
#if TRANS_A
#  define AIDX(m, k) A_OFF(k, m)
#else
#  define AIDX(m, k) A_OFF(m, k)
#endif
#if TRANS_B
#  define BIDX(k, n) B_OFF(n, k)
#else
#  define BIDX(k, n) B_OFF(k, n)
#endif

/* 16-bit pattern -> float, from local memory (portable path) */
#if IS_BF16
#  define LOCAL_F(p, i) BF16_TO_FLOAT((p)[i])
#else
#  define LOCAL_F(p, i) vload_half((size_t)(i), (LPTR const half*)(p))
#endif
/* C elements */
#if C_F32
#  define C_LOAD(p, i) ((p)[i])
#  define C_STORE(p, i, v) ((p)[i] = (v))
#elif IS_BF16
#  define C_LOAD(p, i) BF16_TO_FLOAT((p)[i])
#  define C_STORE(p, i, v) ((p)[i] = FLOAT_TO_BF16(v))
#else
#  define C_LOAD(p, i) vload_half((size_t)(i), (__global const half*)(p))
#  define C_STORE(p, i, v) vstore_half((v), (size_t)(i), (__global half*)(p))
#endif

/* LPTR, smem_addr, mma16816, ldsm4(_t), cp_async16, wg_desc and the wgmma fences (MMA_PTX) */
#include "mma.h"

#if MMA_PTX
#  define UINT4_ZERO MMA_UINT4_ZERO
#  if ASYNC && VEC
#    define ASYNC_COMMIT() CP_ASYNC_COMMIT()
#    define ASYNC_WAIT() CP_ASYNC_WAIT(AHEAD - 1)
#  endif

#  if WGMMA
/* wgmma.mma_async m64nBNk16 (f32 accumulators d, both operands in local memory through matrix
 * descriptors); operand transposes: A m-contiguous (TRANS_A), B n-contiguous (!TRANS_B) */
#    if TRANS_A
#      define WG_TA "1"
#    else
#      define WG_TA "0"
#    endif
#    if TRANS_B
#      define WG_TB "0"
#    else
#      define WG_TB "1"
#    endif
#    define WG_TNSP WG_TA ", " WG_TB
MMA_WGMMA_SS_DEFINE(wgmma_k16, BN, WG_TNSP)
/* K-major tiles (A rows m, B rows n; 128 bytes a row): 8-row atoms 1024 bytes apart, a k16 step
 * 32 bytes into the row. m/n-major tiles (rows k, panels of 64 columns): 8-row groups of k 1024
 * bytes apart, panels BK * 128 bytes apart, a k16 step 16 rows (2048 bytes) down. */
#    define WG_MN_DESC(addr) wg_desc((addr), BK * 128u, 1024u)
#    if TRANS_A
#      define WG_DESC_A(st, kk) WG_MN_DESC(as_s + 2u * (uint)((st) * A_STAGE + wg * (BK * 64)) + (kk) * 128u)
#    else
#      define WG_DESC_A(st, kk) wg_desc(as_s + 2u * (uint)((st) * A_STAGE + wg * (64 * 64)) + (kk) * 2u, 16u, 1024u)
#    endif
#    if TRANS_B
#      define WG_DESC_B(st, kk) wg_desc(bs_s + 2u * (uint)((st) * B_STAGE) + (kk) * 2u, 16u, 1024u)
#    else
#      define WG_DESC_B(st, kk) WG_MN_DESC(bs_s + 2u * (uint)((st) * B_STAGE) + (kk) * 128u)
#    endif
#    define WG_FENCE_ACC() MMA_WG_FENCE_ACC(d, BN / 2)
#  endif
#endif /* MMA_PTX */

#ifndef ASYNC_COMMIT
#  define ASYNC_COMMIT() do { } while (0)
#  define ASYNC_WAIT() do { } while (0)
#endif
#ifndef PROXY_FENCE
#  define PROXY_FENCE() do { } while (0)
#endif

/* One operand tile (ROWS x COLS of its global layout, rows row0.., cols col0..) into local
 * memory element by element (VEC=0: any size); zero outside the matrix (rmax x cmax, leading
 * dimension ld). */
#define LOAD_TILE(dst, src, ROWS, COLS, row0, col0, rmax, cmax, ld)                                 \
    do {                                                                                             \
        for (int e_ = tid; e_ < (ROWS) * (COLS); e_ += NT) {                                         \
            const int r_ = e_ / (COLS), c_ = e_ % (COLS);                                            \
            const int ok_ = (row0) + r_ < (rmax) && (col0) + c_ < (cmax);                            \
            (dst)[TILE_OFF(r_, c_, COLS)] = ok_ ? (src)[(size_t)((row0) + r_) * (size_t)(ld)         \
                                                       + (size_t)((col0) + c_)] : (ushort)0;         \
        }                                                                                            \
    } while (0)

/* VEC=1: 16-byte chunks. Each work-item's chunks of a tile keep their local offset, global
 * pointer at k = 0 and k coordinate from one K-step to the next (set up once: *_SETUP); a
 * K-step adds k0 * (distance between consecutive k) to the pointer. Offset -1: no chunk;
 * k coordinate K: outside the matrix in M or N (zero-filled at every step). */
#define CHA (A_ROWS * A_COLS / 8)
#define CHB (B_ROWS * B_COLS / 8)
#define LA ((CHA + NT - 1) / NT)
#define LB ((CHB + NT - 1) / NT)
#if TRANS_A
#  define A_KSTRIDE ((size_t)M)
#else
#  define A_KSTRIDE ((size_t)1)
#endif
#if TRANS_B
#  define B_KSTRIDE ((size_t)1)
#else
#  define B_KSTRIDE ((size_t)N)
#endif

#if MMA_PTX && ASYNC && VEC
#  define COPY16(base, saddr, off, s, ok) cp_async16((saddr) + 2u * (uint)(off), (s), (ok))
#elif MMA_PTX
#  define COPY16(base, saddr, off, s, ok) \
    (*(LPTR uint4*)((base) + (off)) = (ok) ? *(__global const uint4*)(s) : UINT4_ZERO)
#else
#  define COPY16(base, saddr, off, s, ok) vstore8((ok) ? vload8(0, (s)) : (ushort8)(0), 0, (base) + (off))
#endif

#define VEC_LOAD(L, CH, o, kc, p, X, KSTRIDE, base, saddr, STAGE, st, k0)                            \
    do {                                                                                             \
        _Pragma("unroll")                                                                            \
        for (int l_ = 0; l_ < (L); ++l_) {                                                           \
            if ((CH) % NT == 0 || o[l_] >= 0) {                                                      \
                const int ok_ = (k0) + kc[l_] < K;                                                   \
                COPY16(base, saddr, (st) * (STAGE) + o[l_], ok_ ? p[l_] + (size_t)(k0) * KSTRIDE : (X), ok_); \
            }                                                                                        \
        }                                                                                            \
    } while (0)

#if VEC
#  define LOAD_A(st, k0) VEC_LOAD(LA, CHA, oa, ka, pa, A, A_KSTRIDE, As, as_s, A_STAGE, st, k0)
#  define LOAD_B(st, k0) VEC_LOAD(LB, CHB, ob, kb, pb, B, B_KSTRIDE, Bs, bs_s, B_STAGE, st, k0)
#elif TRANS_A
#  define LOAD_A(st, k0) LOAD_TILE(As + (st) * A_STAGE, A, BK, BM, (k0), m0, K, M, M)
#else
#  define LOAD_A(st, k0) LOAD_TILE(As + (st) * A_STAGE, A, BM, BK, m0, (k0), M, K, KD)
#endif
#if VEC
#elif TRANS_B
#  define LOAD_B(st, k0) LOAD_TILE(Bs + (st) * B_STAGE, B, BN, BK, n0, (k0), N, K, KD)
#else
#  define LOAD_B(st, k0) LOAD_TILE(Bs + (st) * B_STAGE, B, BK, BN, (k0), n0, K, N, N)
#endif

#define KS (BK / 16)  /* m16n8k16 steps per K-step */

#if MMA_PTX
/* The fragments of one k16 step (kk: its first k inside the stage) of stage st into af, bf. */
#  if LDSM
/* ldmatrix x4: lane l gives the row address of matrix l/8, row l%8 (lj, lr) */
#    if TRANS_A  /* rows k, cols m: transposed load */
#      define LDS_A(d, i, st, kk) ldsm4_t(d, as_s + 2u * (uint)((st) * A_STAGE + A_OFF((kk) + lr + (lj >> 1) * 8, wm0 + (i) * 16 + (lj & 1) * 8)))
#    else
#      define LDS_A(d, i, st, kk) ldsm4(d, as_s + 2u * (uint)((st) * A_STAGE + A_OFF(wm0 + (i) * 16 + lr + (lj & 1) * 8, (kk) + (lj >> 1) * 8)))
#    endif
#    if TRANS_B  /* rows n, cols k */
#      define LDS_B(r, j, st, kk) ldsm4(r, bs_s + 2u * (uint)((st) * B_STAGE + B_OFF(wn0 + (j) * 8 + lr + (lj >> 1) * 8, (kk) + (lj & 1) * 8)))
#    else
#      define LDS_B(r, j, st, kk) ldsm4_t(r, bs_s + 2u * (uint)((st) * B_STAGE + B_OFF((kk) + lr + (lj & 1) * 8, wn0 + (j) * 8 + (lj >> 1) * 8)))
#    endif
#    define LOAD_FRAGS(af, bf, st, kk)                                                               \
    do {                                                                                             \
        _Pragma("unroll")                                                                            \
        for (int i = 0; i < MI; ++i) LDS_A(af[i], i, st, kk);                                               \
        _Pragma("unroll")                                                                            \
        for (int j = 0; j < NI; j += 2) {                                                            \
            uint r_[4];                                                                              \
            LDS_B(r_, j, st, kk);                                                                    \
            bf[j][0] = r_[0]; bf[j][1] = r_[1]; bf[j + 1][0] = r_[2]; bf[j + 1][1] = r_[3];          \
        }                                                                                            \
    } while (0)
#  else /* 16-bit reads from local memory */
#    define PAIR_A(as, m, k) ((uint)(as)[AIDX(m, k)] | ((uint)(as)[AIDX(m, (k) + 1)] << 16))
#    define PAIR_B(bs, k, n) ((uint)(bs)[BIDX(k, n)] | ((uint)(bs)[BIDX((k) + 1, n)] << 16))
#    define LOAD_FRAGS(af, bf, st, kk)                                                               \
    do {                                                                                             \
        const LPTR ushort* as_ = As + (st) * A_STAGE;                                                \
        const LPTR ushort* bs_ = Bs + (st) * B_STAGE;                                                \
        _Pragma("unroll")                                                                            \
        for (int i = 0; i < MI; ++i) {                                                               \
            const int m = wm0 + i * 16 + g;                                                          \
            af[i][0] = PAIR_A(as_, m, (kk) + 2 * t);                                                 \
            af[i][1] = PAIR_A(as_, m + 8, (kk) + 2 * t);                                             \
            af[i][2] = PAIR_A(as_, m, (kk) + 2 * t + 8);                                             \
            af[i][3] = PAIR_A(as_, m + 8, (kk) + 2 * t + 8);                                         \
        }                                                                                            \
        _Pragma("unroll")                                                                            \
        for (int j = 0; j < NI; ++j) {                                                               \
            const int n = wn0 + j * 8 + g;                                                           \
            bf[j][0] = PAIR_B(bs_, (kk) + 2 * t, n);                                                 \
            bf[j][1] = PAIR_B(bs_, (kk) + 2 * t + 8, n);                                             \
        }                                                                                            \
    } while (0)
#  endif
#endif /* MMA_PTX */

#if ROWS
/* ---- ROWS=1: skinny x @ W.T (TRANS_A=0, TRANS_B=1: the decode shapes, a few rows of x against
 * row-major weights), bound by streaming W. No local-memory ring: each warp reads W and x straight
 * from global memory, 16 bytes a lane, many loads in flight, and multiplies on the tensor cores.
 * A work-group of RK warps computes RM rows x 8*RN columns of C; its K (the whole K, or the chunk
 * of split z % SPLITK) is cut into RK slices of whole 32-element steps, one a warp; the warps'
 * partial sums meet in local memory and every work-item of the group sums and writes some of them
 * (coalesced). Grid: (ceil(N / (8*RN)) * 32*RK, ceil(M / RM), batch * SPLITK).
 *   MMA_PTX=1: lane l (g = l/4, t = l%4) loads W rows n0 + 8j + g (j < RN) and x rows 16i + g and
 *     16i + g + 8 (i < RM/16) at k .. k+7, k = k0 + 8t (RU such 32-element steps in flight; RP=1:
 *     the next RU steps' loads issued before this one's mma); the 8
 *     elements are the k pairs {2t, 2t+1} and {2t+8, 2t+9} of two m16n8k16 steps, for x and W alike
 *     (a dot product's sum is the same whatever order its k are visited in), so no lane exchange
 *     is needed: accumulator fragments as in the tiled kernel (rows g, g+8, columns 2t, 2t+1).
 *   MMA_PTX=0: each work-item sums the same fragment elements with f32 multiply-adds.
 * VEC=1 (K a multiple of 8): 16-byte loads; VEC=0: element by element. */
#  if !TRANS_B || TRANS_A || RM % 16 != 0
#    error "gemm_mma.cl: ROWS is x @ W.T (TRANS_A=0, TRANS_B=1), RM a multiple of 16"
#  endif
#  define RMI (RM / 16)
#  define RNT (32 * RK)
#  define RCOLS (8 * RN)
#  if MMA_PTX
#    ifdef ISTHMUS_CUDA
#      define MK_UINT4(a, b, c, d) make_uint4((a), (b), (c), (d))
#    else
#      define MK_UINT4(a, b, c, d) ((uint4)((a), (b), (c), (d)))
#    endif
/* 8 elements of row p from k (zero where !ok or past k1) */
static inline uint4 rows_load8(__global const ushort* p, int ok, int k, int k1)
{
#    if VEC
    return (ok && k < k1) ? *(__global const uint4*)(p + k) : MMA_UINT4_ZERO;
#    else
    uint v[4];
#      pragma unroll
    for (int e = 0; e < 4; ++e) {
        const uint lo = (ok && k + 2 * e < k1) ? (uint)p[k + 2 * e] : 0u;
        const uint hi = (ok && k + 2 * e + 1 < k1) ? (uint)p[k + 2 * e + 1] : 0u;
        v[e] = lo | (hi << 16);
    }
    return MK_UINT4(v[0], v[1], v[2], v[3]);
#    endif
}
#  else
#    if IS_BF16
#      define GLOBAL_F(p, i) BF16_TO_FLOAT((p)[i])
#    else
#      define GLOBAL_F(p, i) vload_half((size_t)(i), (__global const half*)(p))
#    endif
#  endif

__kernel ISTHMUS_LOCAL_SIZE(RNT, 1, 1)
void gemm_mma(const int M, const int N, const int KD, const float alpha, const float beta,
              __global const T* A, const long sa, __global const T* B, const long sb,
              __global PT* C, const long sc)
{
    __local float red[RK * RM * RCOLS];  /* each warp's partial sums: [warp][row][column] */
    const int tid = (int)get_local_id(0);
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int n0 = (int)get_group_id(0) * RCOLS, m0 = (int)get_group_id(1) * RM;
#  if SPLITK > 1
    const size_t b = get_group_id(2) / SPLITK;
    const int kchunk = ((KD + SPLITK - 1) / SPLITK + 31) / 32 * 32;  /* whole 32-element steps */
    const int kg0 = min(KD, (int)(get_group_id(2) % SPLITK) * kchunk);
    const int kg1 = min(KD, kg0 + kchunk);
#  else
    const size_t b = get_group_id(2);
    const int kg0 = 0, kg1 = KD;
#  endif
    const int kslice = ((kg1 - kg0 + RK - 1) / RK + 31) / 32 * 32;
    const int k0 = min(kg1, kg0 + warp * kslice), k1 = min(kg1, k0 + kslice);
    A += b * (size_t)sa + (size_t)m0 * (size_t)KD;
    B += b * (size_t)sb;
    C += get_group_id(2) * (size_t)sc;

    float acc[RMI][RN][4];
#  pragma unroll
    for (int i = 0; i < RMI; ++i)
#  pragma unroll
        for (int j = 0; j < RN; ++j)
#  pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#  if MMA_PTX
    __global const ushort* wp[RN];
    __global const ushort* xp[RMI][2];
    int wok[RN], xok[RMI][2];
#    pragma unroll
    for (int j = 0; j < RN; ++j) {
        const int n = n0 + 8 * j + g;
        wok[j] = n < N;
        wp[j] = B + (size_t)(wok[j] ? n : 0) * (size_t)KD;
    }
#    pragma unroll
    for (int i = 0; i < RMI; ++i)
#    pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = 16 * i + g + 8 * h;
            xok[i][h] = m0 + r < M;
            xp[i][h] = A + (size_t)(xok[i][h] ? r : 0) * (size_t)KD;
        }
    /* RU 32-element K-steps of W and x from k (zeros past k1) into w_, x_; then their mma */
#    define ROWS_LOAD(w_, x_, k)                                                                     \
    do {                                                                                             \
        _Pragma("unroll")                                                                            \
        for (int u = 0; u < RU; ++u) {                                                               \
            const int kk = (k) + 32 * u + 8 * t;                                                     \
            _Pragma("unroll")                                                                        \
            for (int j = 0; j < RN; ++j) w_[u][j] = rows_load8(wp[j], wok[j], kk, k1);               \
            _Pragma("unroll")                                                                        \
            for (int i = 0; i < RMI; ++i) {                                                          \
                x_[u][i][0] = rows_load8(xp[i][0], xok[i][0], kk, k1);                               \
                x_[u][i][1] = rows_load8(xp[i][1], xok[i][1], kk, k1);                               \
            }                                                                                        \
        }                                                                                            \
    } while (0)
#    define ROWS_MMA(w_, x_)                                                                         \
    do {                                                                                             \
        _Pragma("unroll")                                                                            \
        for (int u = 0; u < RU; ++u)                                                                 \
            _Pragma("unroll")                                                                        \
            for (int i = 0; i < RMI; ++i) {                                                          \
                const uint a0[4] = {x_[u][i][0].x, x_[u][i][1].x, x_[u][i][0].y, x_[u][i][1].y};     \
                const uint a1[4] = {x_[u][i][0].z, x_[u][i][1].z, x_[u][i][0].w, x_[u][i][1].w};     \
                _Pragma("unroll")                                                                    \
                for (int j = 0; j < RN; ++j) {                                                       \
                    mma16816(acc[i][j], a0, w_[u][j].x, w_[u][j].y);                                 \
                    mma16816(acc[i][j], a1, w_[u][j].z, w_[u][j].w);                                 \
                }                                                                                    \
            }                                                                                        \
    } while (0)
#    if RP  /* the next K-steps' loads are issued before this one's mma (twice the bytes in flight) */
    uint4 wv[RU][RN], xv[RU][RMI][2];
    ROWS_LOAD(wv, xv, k0);
    for (int k = k0; k < k1; k += 32 * RU) {
        uint4 wn[RU][RN], xn[RU][RMI][2];
        ROWS_LOAD(wn, xn, k + 32 * RU);
        ROWS_MMA(wv, xv);
#      pragma unroll
        for (int u = 0; u < RU; ++u) {
#      pragma unroll
            for (int j = 0; j < RN; ++j) wv[u][j] = wn[u][j];
#      pragma unroll
            for (int i = 0; i < RMI; ++i) { xv[u][i][0] = xn[u][i][0]; xv[u][i][1] = xn[u][i][1]; }
        }
    }
#    else
    for (int k = k0; k < k1; k += 32 * RU) {
        uint4 wv[RU][RN], xv[RU][RMI][2];
        ROWS_LOAD(wv, xv, k);
        ROWS_MMA(wv, xv);
    }
#    endif
#  else /* portable: this work-item's fragment elements (rows g, g+8; columns 2t, 2t+1) */
    for (int i = 0; i < RMI; ++i)
        for (int h = 0; h < 2; ++h) {
            const int r = 16 * i + g + 8 * h;
            if (m0 + r >= M) continue;
            for (int j = 0; j < RN; ++j)
                for (int e = 0; e < 2; ++e) {
                    const int n = n0 + 8 * j + 2 * t + e;
                    if (n >= N) continue;
                    __global const T* x = A + (size_t)r * (size_t)KD;
                    __global const T* w = B + (size_t)n * (size_t)KD;
                    float s = 0.0f;
                    for (int k = k0; k < k1; ++k) s = fma(GLOBAL_F(x, k), GLOBAL_F(w, k), s);
                    acc[i][j][2 * h + e] = s;
                }
        }
#  endif

#  pragma unroll
    for (int i = 0; i < RMI; ++i)
#  pragma unroll
        for (int j = 0; j < RN; ++j)
#  pragma unroll
            for (int e = 0; e < 4; ++e)
                red[(warp * RM + 16 * i + g + 8 * (e >> 1)) * RCOLS + 8 * j + 2 * t + (e & 1)] = acc[i][j][e];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int read_c = beta != 0.0f;
    for (int q = tid; q < RM * RCOLS; q += RNT) {
        const int r = m0 + q / RCOLS, c = n0 + q % RCOLS;
        if (r < M && c < N) {
            float v = 0.0f;
#  pragma unroll
            for (int w = 0; w < RK; ++w) v += red[w * RM * RCOLS + q];
            const size_t o = (size_t)r * (size_t)N + (size_t)c;
#  if SPLITK > 1
            C[o] = v;  /* (alpha 1, beta 0: the combine applies them) */
#  else
            v *= alpha;
            if (read_c) v += beta * C_LOAD(C, o);
            C_STORE(C, o, v);
#  endif
        }
    }
}

#else /* ROWS=0: the tiled kernel */
__kernel ISTHMUS_LOCAL_SIZE(NT, 1, 1)
void gemm_mma(const int M, const int N, const int KD, const float alpha, const float beta,
              __global const T* A, const long sa, __global const T* B, const long sb,
              __global PT* C, const long sc)
{
#if DYN_SMEM
    /* CUDA: the ring is dynamic shared memory (the host sets its size, SMEM_ELEMS * 2 bytes, at
     * launch and raises the kernel's limit), so it may exceed the 48 KiB of a static array */
    extern __shared__ __align__(16) ushort gemm_mma_smem[];
#  if WGMMA  /* swizzle atoms start on 1024-byte boundaries: the host gives 1024 bytes more */
    ushort* const As = gemm_mma_smem + ((1024u - (smem_addr(gemm_mma_smem) & 1023u)) & 1023u) / 2u;
#  else
    ushort* const As = gemm_mma_smem;
#  endif
    ushort* const Bs = As + STAGES * A_STAGE;
#else
    __local ushort As[STAGES * A_STAGE] ISTHMUS_ALIGN(128);
    __local ushort Bs[STAGES * B_STAGE] ISTHMUS_ALIGN(128);
#endif

    const int tid = (int)get_local_id(0);
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp % WM) * WTM, wn0 = (warp / WM) * WTN;

    /* tile numbering: groups of GM tile rows, walked column by column */
    const int ntn = (int)get_num_groups(0), ntm = (int)get_num_groups(1);
    const int pid = (int)get_group_id(1) * ntn + (int)get_group_id(0);
    const int first = (pid / (GM * ntn)) * GM;
    const int rows = min(ntm - first, GM);
    const int m0 = (first + (pid % (GM * ntn)) % rows) * BM;
    const int n0 = ((pid % (GM * ntn)) / rows) * BN;

    /* KD: the matrices' K (a leading dimension of A or B); K: the extent this group multiplies */
#if SPLITK > 1
    const size_t b = get_group_id(2) / SPLITK;
    const int kchunk = ((KD + SPLITK - 1) / SPLITK + BK - 1) / BK * BK;  /* whole K-steps a split */
    const int ks0 = (int)(get_group_id(2) % SPLITK) * kchunk;
    const int K = max(0, min(KD - ks0, kchunk));
    A += TRANS_A ? (size_t)ks0 * (size_t)M : (size_t)ks0;
    B += TRANS_B ? (size_t)ks0 : (size_t)ks0 * (size_t)N;
#else
    const size_t b = get_group_id(2);
    const int K = KD;
#endif
    A += b * (size_t)sa;
    B += b * (size_t)sb;
    C += get_group_id(2) * (size_t)sc;
#if MMA_PTX
    const uint as_s = smem_addr(As), bs_s = smem_addr(Bs);  /* shared-space addresses of the rings */
#endif
#if VEC
    __global const ushort* pa[LA];
    __global const ushort* pb[LB];
    int oa[LA], ka[LA], ob[LB], kb[LB];
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int e = tid + l * NT, r = e / (A_COLS / 8), c = (e % (A_COLS / 8)) * 8;
        oa[l] = (CHA % NT == 0 || e < CHA) ? A_OFF(r, c) : -1;
#  if TRANS_A   /* rows k, cols m */
        pa[l] = A + (size_t)r * (size_t)M + (size_t)(m0 + c);
        ka[l] = m0 + c < M ? r : K;
#  else         /* rows m, cols k */
        pa[l] = A + (size_t)(m0 + r) * (size_t)KD + (size_t)c;
        ka[l] = m0 + r < M ? c : K;
#  endif
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int e = tid + l * NT, r = e / (B_COLS / 8), c = (e % (B_COLS / 8)) * 8;
        ob[l] = (CHB % NT == 0 || e < CHB) ? B_OFF(r, c) : -1;
#  if TRANS_B   /* rows n, cols k */
        pb[l] = B + (size_t)(n0 + r) * (size_t)KD + (size_t)c;
        kb[l] = n0 + r < N ? c : K;
#  else         /* rows k, cols n */
        pb[l] = B + (size_t)r * (size_t)N + (size_t)(n0 + c);
        kb[l] = n0 + c < N ? r : K;
#  endif
    }
#endif

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    const int ntiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (s < ntiles) {
            LOAD_A(s, s * BK);
            LOAD_B(s, s * BK);
        }
        ASYNC_COMMIT();
    }

#if MMA_PTX
#  if LDSM && !WGMMA
    const int lj = lane >> 3, lr = lane & 7;
#  endif
#  if !WGMMA
    uint af[2][MI][4], bf[2][NI][2];
#  endif
#  define MMA_ALL(f)                                                                                 \
    do {                                                                                             \
        _Pragma("unroll")                                                                            \
        for (int i = 0; i < MI; ++i)                                                                 \
            _Pragma("unroll")                                                                        \
            for (int j = 0; j < NI; ++j) mma16816(acc[i][j], af[f][i], bf[f][j][0], bf[f][j][1]);    \
    } while (0)
    int rs = 0, ws = AHEAD;  /* the stage read now, the stage refilled next */
    /* queue the copies of K-step kt + AHEAD into stage ws (an empty group past the end, so that
     * ASYNC_WAIT's count holds), and move ws on */
#  define REFILL(kt)                                                                                 \
    do {                                                                                             \
        const int nk = (kt) + AHEAD;                                                                 \
        if (nk < ntiles) {                                                                           \
            LOAD_A(ws, nk * BK);                                                                     \
            LOAD_B(ws, nk * BK);                                                                     \
        }                                                                                            \
        ASYNC_COMMIT();                                                                              \
        ws = ws + 1 == STAGES ? 0 : ws + 1;                                                          \
    } while (0)
#  if WGMMA
    const int wg = warp >> 2;  /* this warpgroup: rows 64 * wg.. of the tile */
    float* const d = &acc[0][0][0];
    WG_FENCE_ACC();
    for (int kt = 0; kt < ntiles; ++kt) {
        ASYNC_WAIT();   /* this work-item's copies of the stage read now have landed */
        PROXY_FENCE();
        barrier(CLK_LOCAL_MEM_FENCE);  /* everyone's have; every warpgroup is done with kt - 2 */
        REFILL(kt);
        WG_FENCE_ACC();
        WG_FENCE();
#    pragma unroll
        for (int kk = 0; kk < BK; kk += 16) wgmma_k16(d, WG_DESC_A(rs, kk), WG_DESC_B(rs, kk));
        WG_COMMIT();
        WG_WAIT(1);     /* the group of K-step kt - 1 is done: its stage may be refilled */
        WG_FENCE_ACC();
        rs = rs + 1 == STAGES ? 0 : rs + 1;
    }
    WG_WAIT(0);
    WG_FENCE_ACC();
#  elif PIPE
    /* Software pipeline: the fragments of the next k16 step are read from local memory (into the
     * other half of af/bf) while the tensor cores multiply the current one, across K-steps too:
     * the one barrier of a K-step comes before its last k16 step, so the next stage's first
     * fragments load while that last step multiplies. The refill of the stage every warp finished
     * reading (the one before the current) is queued at the first k16 step of each K-step.
     * The k16 steps are written out (KS is 1, 2 or 4) so that af/bf are only ever indexed by
     * constants: an array indexed at run time would leave the registers. */
#    define K16_STEP(kk)                                                                              \
    do {                                                                                             \
        if ((kk) == 0) REFILL(kt);                                                                   \
        if ((kk) == KS - 1) { /* the next stage has landed; every warp is done with the last one */ \
            ASYNC_WAIT();                                                                            \
            barrier(CLK_LOCAL_MEM_FENCE);                                                            \
            rs = rs + 1 == STAGES ? 0 : rs + 1;                                                      \
        }                                                                                            \
        LOAD_FRAGS(af[((kk) + 1) & 1], bf[((kk) + 1) & 1], rs, (((kk) + 1) % KS) * 16);              \
        MMA_ALL((kk) & 1);                                                                           \
    } while (0)
    ASYNC_WAIT();
    barrier(CLK_LOCAL_MEM_FENCE);
    LOAD_FRAGS(af[0], bf[0], 0, 0);
    for (int kt = 0; kt < ntiles; ++kt) {
        K16_STEP(0);
#    if KS == 1  /* the next step's fragments are in af[1]: bring them to af[0] for the next K-step */
#      pragma unroll
        for (int i = 0; i < MI; ++i)
#      pragma unroll
            for (int e = 0; e < 4; ++e) af[0][i][e] = af[1][i][e];
#      pragma unroll
        for (int j = 0; j < NI; ++j) { bf[0][j][0] = bf[1][j][0]; bf[0][j][1] = bf[1][j][1]; }
#    else
        K16_STEP(1);
#    endif
#    if KS == 4
        K16_STEP(2);
        K16_STEP(3);
#    endif
    }
#  else /* PIPE=0: one barrier at the top of each K-step, then each k16 step loads and multiplies */
    for (int kt = 0; kt < ntiles; ++kt) {
        ASYNC_WAIT();
        barrier(CLK_LOCAL_MEM_FENCE);
        REFILL(kt);
#    pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            LOAD_FRAGS(af[0], bf[0], rs, kk);
            MMA_ALL(0);
        }
        rs = rs + 1 == STAGES ? 0 : rs + 1;
    }
#  endif
#else /* portable: this work-item's fragment elements, f32 multiply-adds */
    for (int kt = 0; kt < ntiles; ++kt) {
        barrier(CLK_LOCAL_MEM_FENCE);
        /* refill the stage every work-item finished reading in the previous step */
        {
            const int nk = kt + STAGES - 1;
            if (nk < ntiles) {
                LOAD_A(nk % STAGES, nk * BK);
                LOAD_B(nk % STAGES, nk * BK);
            }
        }
        const LPTR ushort* as = As + (kt % STAGES) * A_STAGE;
        const LPTR ushort* bs = Bs + (kt % STAGES) * B_STAGE;
        for (int kk = 0; kk < BK; kk += 16) {
            for (int i = 0; i < MI; ++i) {
                const int m = wm0 + i * 16 + g;
                for (int j = 0; j < NI; ++j) {
                    const int n = wn0 + j * 8 + 2 * t;
                    float d0 = acc[i][j][0], d1 = acc[i][j][1], d2 = acc[i][j][2], d3 = acc[i][j][3];
                    for (int k = kk; k < kk + 16; ++k) {
                        const float a0 = LOCAL_F(as, AIDX(m, k)), a1 = LOCAL_F(as, AIDX(m + 8, k));
                        const float b0 = LOCAL_F(bs, BIDX(k, n)), b1 = LOCAL_F(bs, BIDX(k, n + 1));
                        d0 = fma(a0, b0, d0); d1 = fma(a0, b1, d1);
                        d2 = fma(a1, b0, d2); d3 = fma(a1, b1, d3);
                    }
                    acc[i][j][0] = d0; acc[i][j][1] = d1; acc[i][j][2] = d2; acc[i][j][3] = d3;
                }
            }
        }
    }
#endif

    /* epilogue: rows g and g+8, columns 2t and 2t+1 of each fragment */
    const int read_c = beta != 0.0f;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = m0 + wm0 + i * 16 + g + h * 8;
            if (r < M) {
#pragma unroll
                for (int j = 0; j < NI; ++j) {
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int c = n0 + wn0 + j * 8 + 2 * t + e;
                        if (c < N) {
                            const size_t o = (size_t)r * (size_t)N + (size_t)c;
                            float v = alpha * acc[i][j][h * 2 + e];
#if SPLITK > 1
                            C[o] = v;  /* (alpha 1, beta 0: the combine applies them) */
#else
                            if (read_c) v += beta * C_LOAD(C, o);
                            C_STORE(C, o, v);
#endif
                        }
                    }
                }
            }
        }
    }
}

#endif /* ROWS */

#if SPLITK > 1
__kernel void gemm_mma_combine(const long mn, const int batch, const float alpha, const float beta,
                               __global const float* P, __global CT* C)
{
    const long total = mn * (long)batch;
    for (long i = get_global_id(0); i < total; i += (long)get_global_size(0)) {
        const __global float* p = P + (i / mn) * SPLITK * mn + i % mn;
        float v = 0.0f;
        for (int s = 0; s < SPLITK; ++s) v += p[s * mn];
        v *= alpha;
        if (beta != 0.0f) v += beta * C_LOAD(C, i);
        C_STORE(C, i, v);
    }
}
#endif
