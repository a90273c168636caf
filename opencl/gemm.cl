/* isthmus: gemm.cl -- C = alpha * A @ B + beta * C   (row-major, any M, N, K)
 *
 * Kernel:
 *   __kernel void gemm(const int M, const int N, const int K,
 *                      const ACC alpha, const ACC beta,
 *                      __global const T* A, __global const T* B, __global T* C)
 * A: M x K, B: K x N, C: M x N, all row-major and dense (leading dims K, N, N).
 * beta == 0: C is not read (it may hold NaN garbage).  K == 0: C = beta*C (or 0).
 * dtypes: float double half (half: ACC float, loads/stores through LOAD/STORE).
 *
 * Scheme: a work-group computes a TM x TN tile of C; it walks K in steps of TK, staging
 * A (transposed, As[TK][TM+4]) and B (Bs[TK][TN]) in local memory, zero-filled outside the
 * matrices; the next K-step is prefetched into registers while the current one is used.
 * Work-item (tx, ty) owns a WPTM x WPTN register block, made of strips of 4 (or WPT if < 4)
 * consecutive rows/columns spaced TM/WPTM*4 (TN/WPTN*4) apart, so that local-memory reads
 * are 16-byte vectors without bank conflicts and C is written in 16-byte runs.
 *
 * Tunables (-D), all powers of two:
 *   TM    rows of C per work-group      16,32,64,128      default 128
 *   TN    cols of C per work-group      16,32,64,128      default 128
 *   TK    K-step                        8,16,32           default 16
 *   WPTM  rows per work-item            1,2,4,8           default 8
 *   WPTN  cols per work-item            1,2,4,8           default 8
 * Restrictions (Python expressions):
 *   TM % WPTM == 0 and TN % WPTN == 0            (always true for the values above)
 *   (TM // WPTM) * (TN // WPTN) <= max_work_group_size
 *   (TK * (TM + 4) + TK * TN) * sizeof(ACC) <= local_mem_size   (CUDA static limit 48 KiB)
 *   (WPTM < 4 or (TM // WPTM) * 4 * (WPTM // 4) == TM) -- true for pow2 values
 * Launch (2-D; dim 0 runs along N):
 *   local  = (TN // WPTN, TM // WPTM)
 *   global = (((N + TN - 1) // TN) * (TN // WPTN), ((M + TM - 1) // TM) * (TM // WPTM))
 *   (M == 0 or N == 0: launch nothing.  CUDA: (M + TM - 1)//TM <= 65535.)
 * Good defaults: GPU TM=TN=128, TK=16, WPTM=WPTN=8 (256 work-items);
 *                CPU (PoCL) TM=TN=64, TK=16, WPTM=WPTN=4 (256 work-items) or WPT 8x8 (64).
 */
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

#define NTX (TN / WPTN)              /* work-items along N (local dim 0) */
#define NTY (TM / WPTM)              /* work-items along M (local dim 1) */
#define NT (NTX * NTY)
#define VM (WPTM < 4 ? WPTM : 4)     /* strip height */
#define VN (WPTN < 4 ? WPTN : 4)     /* strip width */
#define PADA 4
#define LA ((TM * TK + NT - 1) / NT) /* A elements staged per work-item */
#define LB ((TK * TN + NT - 1) / NT) /* B elements staged per work-item */
#define A_EXACT ((TM * TK) % NT == 0)
#define B_EXACT ((TK * TN) % NT == 0)

#if TM % WPTM != 0 || TN % WPTN != 0
#  error "gemm.cl: TM % WPTM and TN % WPTN must be 0"
#endif

/* row (col) inside the tile of register i (j) of work-item ty (tx) */
#define ROW(i, ty) (((i) / VM) * (NTY * VM) + (ty) * VM + ((i) % VM))
#define COL(j, tx) (((j) / VN) * (NTX * VN) + (tx) * VN + ((j) % VN))

__kernel ISTHMUS_LOCAL_SIZE(NTX, NTY, 1)
void gemm(const int M, const int N, const int K,
          const ACC alpha, const ACC beta,
          __global const T* A, __global const T* B, __global T* C)
{
    __local ACC As[TK][TM + PADA] ISTHMUS_ALIGN(16);
    __local ACC Bs[TK][TN] ISTHMUS_ALIGN(16);

    const int tx = (int)get_local_id(0);
    const int ty = (int)get_local_id(1);
    const int tid = ty * NTX + tx;
    const int m0 = (int)get_group_id(1) * TM;
    const int n0 = (int)get_group_id(0) * TN;

    ACC acc[WPTM][WPTN];
#pragma unroll
    for (int i = 0; i < WPTM; ++i)
#pragma unroll
        for (int j = 0; j < WPTN; ++j) acc[i][j] = (ACC)0;

    ACC ra[LA], rb[LB];
    const int ntiles = (K + TK - 1) / TK;

    /* global -> registers for the K-step starting at k0 */
#define FETCH(k0)                                                                   \
    do {                                                                            \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LA; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            const int r = m0 + idx / TK, k = (k0) + idx % TK;                       \
            ra[l] = ((A_EXACT || idx < TM * TK) && r < M && k < K)                  \
                  ? LOAD(A, (size_t)r * (size_t)K + (size_t)k) : (ACC)0;            \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LB; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            const int k = (k0) + idx / TN, c = n0 + idx % TN;                       \
            rb[l] = ((B_EXACT || idx < TK * TN) && k < K && c < N)                  \
                  ? LOAD(B, (size_t)k * (size_t)N + (size_t)c) : (ACC)0;            \
        }                                                                           \
    } while (0)
    /* registers -> local memory */
#define STAGE()                                                                     \
    do {                                                                            \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LA; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            if (A_EXACT || idx < TM * TK) As[idx % TK][idx / TK] = ra[l];           \
        }                                                                           \
        _Pragma("unroll")                                                           \
        for (int l = 0; l < LB; ++l) {                                              \
            const int idx = tid + l * NT;                                           \
            if (B_EXACT || idx < TK * TN) Bs[idx / TN][idx % TN] = rb[l];           \
        }                                                                           \
    } while (0)

    if (ntiles > 0) {
        FETCH(0);
        STAGE();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = 0; t < ntiles; ++t) {
        const int more = t + 1 < ntiles;
        if (more) FETCH((t + 1) * TK);
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

    /* epilogue */
    const int read_c = beta != (ACC)0;
#pragma unroll
    for (int i = 0; i < WPTM; ++i) {
        const int r = m0 + ROW(i, ty);
        if (r < M) {
#pragma unroll
            for (int j = 0; j < WPTN; ++j) {
                const int c = n0 + COL(j, tx);
                if (c < N) {
                    const size_t o = (size_t)r * (size_t)N + (size_t)c;
                    ACC v = alpha * acc[i][j];
                    if (read_c) v += beta * LOAD(C, o);
                    STORE(C, o, v);
                }
            }
        }
    }
}
