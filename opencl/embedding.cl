/* isthmus: embedding.cl -- rows of a table gathered by ids
 *
 * Kernel:
 *   __kernel void embedding(const long rows, const long cols, const long vocab, __global const ID* ids,
 *                           __global const T* table, __global T* out, __global int* bad)
 * out[r, :] = table[ids[r], :] (out: rows x cols, table: vocab x cols, row-major). An id outside
 * 0 .. vocab-1 is never read out of bounds: its row is read from the id clamped into that range,
 * and bad[0] is set to 1 (the op reads it after the launch and raises).
 * ID (fixed -D): the ids' type, int or long.
 * dtypes: any (a copy of the bits; bfloat16 and half as their 16-bit patterns).
 * Tunables (-D): WG, VPT, LAYOUT (declared in python/isthmus/ops/specs/embedding.py).
 * Launch (1-D), local = (WG,), global = rows * chunks * WG, chunks = ceil(cols / span):
 *   LAYOUT 0: a group's span is WG*VPT columns of one row; item t copies t + j*WG (coalesced);
 *   LAYOUT 1 (CPUs: OpenCL vectors): a group's span is WG*VPT*16 columns, each item a contiguous
 *     VPT*16 of them as 16-wide vectors.
 */
#if !defined(LAYOUT) || !defined(WG) || !defined(VPT) || !defined(ID)
#  error "embedding.cl: build it through its op, which passes every tunable (-D)"
#endif
#if LAYOUT == 1
#  define SPAN (WG * VPT * 16)
#else
#  define SPAN (WG * VPT)
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void embedding(const long rows, const long cols, const long vocab, __global const ID* ids,
               __global const T* table, __global T* out, __global int* bad)
{
    const long chunks = (cols + SPAN - 1) / SPAN;
    const long group = (long)get_group_id(0);
    const long row = group / chunks;
    if (row >= rows)
        return;
    const long c0 = (group - row * chunks) * SPAN;
    long id = (long)ids[row];
    if (id < 0 || id >= vocab) {
        if (c0 == 0 && get_local_id(0) == 0)
            bad[0] = 1;   /* every writer writes the same value */
        id = id < 0 ? 0 : vocab - 1;
    }
    __global const T* src = table + id * cols;
    __global T* dst = out + row * cols;
    const int t = (int)get_local_id(0);
#if LAYOUT == 0
    T v[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const long c = c0 + t + (long)j * WG;
        if (c < cols)
            v[j] = src[c];
    }
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const long c = c0 + t + (long)j * WG;
        if (c < cols)
            dst[c] = v[j];
    }
#else
    long c = c0 + (long)t * VPT * 16;
    const long end = c + VPT * 16;
    const long hi = end < cols ? end : cols;
    for (; c + 16 <= hi; c += 16)
        vstore16(vload16(0, src + c), 0, dst + c);
    for (; c < hi; ++c)
        dst[c] = src[c];
#endif
}
