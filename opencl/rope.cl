/* isthmus: rope.cl -- rotary position embedding, in place on q (and k)
 *
 * Kernel:
 *   __kernel void rope(const int tokens, const int npos, const int hq, const int hk, const int head_dim,
 *                      const int npairs, __global const POS* positions, __global const float* inv_freq,
 *                      __global T* q, __global T* k)
 * q: tokens x hq x head_dim, k: tokens x hk x head_dim (hk = 0: no k), row-major. Token t sits at
 * position positions[t % npos] (npos = tokens, or the sequence length of a (batch, seq) problem
 * whose positions are shared by the batch). Pair i < npairs (npairs = rotary_dim / 2) of a head turns
 * by the angle (float)pos * inv_freq[i], in float32 (the order Hugging Face computes it in):
 *   (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin),
 * x1, x2 = x[i], x[i + npairs] (INTERLEAVED 0: Llama, NeoX, Hugging Face's rotate_half) or
 * x[2i], x[2i + 1] (INTERLEAVED 1: GPT-J); elements past rotary_dim stay as they are.
 * inv_freq: npairs float32 frequencies, the op's table (scaling applied, computed on the host).
 * POS (fixed -D): the positions' type, int or long.
 * dtypes: float half bfloat16 (float arithmetic, one rounding on store).
 * Tunables (-D): WG, VPT (pairs per item), HPI (heads per item), declared in specs/rope.py.
 * Launch (2-D), local = (WG, 1): global = (ceil(tokens * pg / WG) * WG, ceil((hq + hk) / HPI)),
 *   pg = ceil(npairs / VPT) pair groups per token; item (x, y) takes token x / pg, pairs
 *   x % pg + j * pg (j < VPT: consecutive items, consecutive pairs) of heads y*HPI .. y*HPI + HPI - 1,
 *   computing each pair's cos and sin once for all of them.
 */
#if !defined(WG) || !defined(VPT) || !defined(HPI) || !defined(POS) || !defined(INTERLEAVED)
#  error "rope.cl: build it through its op, which passes every tunable (-D)"
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void rope(const int tokens, const int npos, const int hq, const int hk, const int head_dim, const int npairs,
          __global const POS* positions, __global const float* inv_freq, __global T* q, __global T* k)
{
    const int pg = (npairs + VPT - 1) / VPT;
    const long x = (long)get_global_id(0);
    const int t = (int)(x / pg);
    if (t >= tokens)
        return;
    const int p0 = (int)(x - (long)t * pg);
    const float pos = (float)positions[t % npos];
    float c[VPT], s[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const int i = p0 + j * pg;
        const float a = i < npairs ? pos * inv_freq[i] : 0.0f;
        c[j] = cos(a);
        s[j] = sin(a);
    }
    const int h0 = (int)get_global_id(1) * HPI;
    const int h1 = h0 + HPI < hq + hk ? h0 + HPI : hq + hk;
    for (int h = h0; h < h1; ++h) {
        __global T* row = h < hq ? q + ((long)t * hq + h) * head_dim : k + ((long)t * hk + (h - hq)) * head_dim;
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int i = p0 + j * pg;
            if (i < npairs) {
#if INTERLEAVED
                const int i1 = 2 * i, i2 = 2 * i + 1;
#else
                const int i1 = i, i2 = i + npairs;
#endif
                const float x1 = (float)LOAD(row, i1), x2 = (float)LOAD(row, i2);
                STORE(row, i1, x1 * c[j] - x2 * s[j]);
                STORE(row, i2, x2 * c[j] + x1 * s[j]);
            }
        }
    }
}
