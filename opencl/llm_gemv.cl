/* isthmus.llm: y = x @ W.T for bfloat16 x (M, K) and W (N, K) with a few rows (M <= 8): a decode
 * step's projections, bound by reading W once (python/isthmus/llm/gemv.py; an experiment measured
 * against ops.gemm's tensor-core tiles, to move into ops.gemm if it wins).
 * A work-group of WARPS warps of 32 work-items; each warp owns RN columns of y (rows of W) and every
 * row of x. Lane l reads 16 bytes (8 bf16) at quads l, l+32, ... of each W row, so a warp reads
 * 512 contiguous bytes a load; x's rows come from the caches. The 32 partial sums of each output
 * are added up through local memory. bf16 values are the top halves of float32 (shifts only);
 * f32 accumulation; the result rounded to bf16 (nearest even) or stored as float32 (OUT_F32).
 * Buffers are passed as bytes (uchar*): isthmus binds bfloat16 as ushort patterns.
 * Needs K % 8 == 0 and 16-byte aligned rows. Defines: RM (= M), RN, WARPS, OUT_F32.
 * Launch: local (32 * WARPS), global ceil(N / (WARPS * RN)) * 32 * WARPS. */
#define LANES 32

__kernel void llm_gemv_bf16(const int M, const int N, const int K, __global const uchar* xb,
                            __global const uchar* wb, __global uchar* yb)
{
    __global const ushort* x = (__global const ushort*)xb;
    __global const ushort* w = (__global const ushort*)wb;
    __local float red[WARPS][LANES][RM * RN + 1];
    const int lid = (int)get_local_id(0), lane = lid % LANES, wp = lid / LANES;
    const int c0 = ((int)get_group_id(0) * WARPS + wp) * RN;
    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;
    int cols[RN];
#pragma unroll
    for (int j = 0; j < RN; ++j) cols[j] = min(c0 + j, N - 1);  /* clamped for the loads, never stored */
    const int kq = K / 8;
    for (int q = lane; q < kq; q += LANES) {
        uint4 b[RN];
#pragma unroll
        for (int j = 0; j < RN; ++j) b[j] = *(const __global uint4*)(w + (size_t)cols[j] * (size_t)K + 8 * q);
#pragma unroll
        for (int i = 0; i < RM; ++i) {
            const uint4 a = *(const __global uint4*)(x + (size_t)min(i, M - 1) * (size_t)K + 8 * q);
            const float a0 = as_float(a.x << 16), a1 = as_float(a.x & 0xffff0000u);
            const float a2 = as_float(a.y << 16), a3 = as_float(a.y & 0xffff0000u);
            const float a4 = as_float(a.z << 16), a5 = as_float(a.z & 0xffff0000u);
            const float a6 = as_float(a.w << 16), a7 = as_float(a.w & 0xffff0000u);
#pragma unroll
            for (int j = 0; j < RN; ++j) {
                const uint4 v = b[j];
                acc[i][j] += a0 * as_float(v.x << 16) + a1 * as_float(v.x & 0xffff0000u)
                           + a2 * as_float(v.y << 16) + a3 * as_float(v.y & 0xffff0000u)
                           + a4 * as_float(v.z << 16) + a5 * as_float(v.z & 0xffff0000u)
                           + a6 * as_float(v.w << 16) + a7 * as_float(v.w & 0xffff0000u);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) red[wp][lane][i * RN + j] = acc[i][j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = lane; o < RM * RN; o += LANES) {
        float s = 0.0f;
        for (int l = 0; l < LANES; ++l) s += red[wp][l][o];
        const int r = o / RN, c = c0 + o % RN;
        if (r < M && c < N) {
#if OUT_F32
            ((__global float*)yb)[(size_t)r * (size_t)N + c] = s;
#else
            uint u = as_uint(s);
            u += 0x7fffu + ((u >> 16) & 1u);
            ((__global ushort*)yb)[(size_t)r * (size_t)N + c] = (ushort)(u >> 16);
#endif
        }
    }
}
