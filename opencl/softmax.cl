/* isthmus: softmax.cl -- numerically stable softmax of each row
 *
 * Kernel:
 *   __kernel void softmax(const int rows, const int cols, __global const T* x, __global T* y)
 * x, y: rows x cols, row-major (y may not alias x).  y[r,:] = exp(x[r,:] - max) / sum(...).
 * dtypes: float double half (ACC float for half).
 * One work-group per row.  Pass 1 reads the row once and keeps a running (max, sum of exp)
 * per work-item (online softmax, VPT coalesced loads in flight per step: elements
 * base + k*WG), merged by a local-memory tree; pass 2 reads the row again and writes y.
 * cols == 0: nothing is written.  -inf entries give 0; a row of all -inf gives NaN like
 * NumPy; NaN inside a row: result unspecified.  Needs cols + WG*VPT < 2^31.
 * Tunables (-D):
 *   WG  work-group size  32,64,128,256,512,1024  default 256
 *       restriction: WG <= max_work_group_size and 2*WG*sizeof(ACC) <= local_mem_size
 *   VPT elements per work-item per step (optional)  1,2,4,8  default 4
 * Launch (1-D):  global = (rows*WG,)   local = (WG,)
 */
#ifndef WG
#define WG 256
#endif
#ifndef VPT
#define VPT 4
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

    /* pass 1: running max m and sum s of exp(x - m), VPT loads in flight per step */
    ACC m = -INFINITY, s = (ACC)0;
    for (int base = lid; base < cols; base += WG * VPT) {
        ACC v[VPT];
        ACC mk = -INFINITY;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = base + k * WG;
            v[k] = c < cols ? LOAD(x, off + c) : -INFINITY;
            mk = v[k] > mk ? v[k] : mk;
        }
        if (mk > m) { s *= exp(m - mk); m = mk; }     /* m = -inf: s is 0, exp gives 0 */
        if (m != -INFINITY) {                         /* else all seen so far are -inf */
#pragma unroll
            for (int k = 0; k < VPT; ++k) s += exp(v[k] - m);
        }
    }
    sm[lid] = m; ss[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int st = WG / 2; st > 0; st >>= 1) {
        if (lid < st) {
            const ACC m1 = sm[lid], m2 = sm[lid + st];
            const ACC s1 = ss[lid], s2 = ss[lid + st];
            const ACC mm = m1 > m2 ? m1 : m2;
            /* empty halves carry m = -inf, s = 0: avoid (-inf) - (-inf) */
            const ACC e1 = (m1 == -INFINITY) ? (ACC)0 : s1 * exp(m1 - mm);
            const ACC e2 = (m2 == -INFINITY) ? (ACC)0 : s2 * exp(m2 - mm);
            sm[lid] = mm; ss[lid] = e1 + e2;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ACC mx = sm[0];
    const ACC inv = (ACC)1 / ss[0];

    /* pass 2: write */
    for (int base = lid; base < cols; base += WG * VPT) {
        ACC v[VPT];
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = base + k * WG;
            v[k] = c < cols ? LOAD(x, off + c) : (ACC)0;
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int c = base + k * WG;
            if (c < cols) STORE(y, off + c, exp(v[k] - mx) * inv);
        }
    }
}
