/* isthmus: linear_attention.cl -- linear attention (Katharopoulos et al.): the kernel trick
 *
 *   o_i = phi(q_i) . S_i / phi(q_i) . z_i,   S_i = sum_j phi(k_j) v_j^T,  z_i = sum_j phi(k_j)
 *   (j <= i when causal, every j otherwise; plus the keys a given state already holds)
 *
 * Kernel:
 *   __kernel void linear_attention(const int seq, const int heads, const int causal, const int fmap,
 *       __global const T* q, __global const T* k, __global const T* v, __global T* o,
 *       __global float* state, const int has_state, const int write_state)
 * q, k, v, o: (batch, seq, heads, HD), contiguous.  phi: fmap 0 elu(x) + 1, 1 relu, 2 identity.
 * state: (batch, heads, HD, HD + 1) float32: S[d][c] at d*(HD+1) + c, z[d] at d*(HD+1) + HD; read
 * as the starting sums when has_state (else zeros), written with this call's keys added when
 * write_state (a recurrent step: one token per call, O(1) work per token).  A zero denominator
 * gives 0.
 *
 * Scheme: a work-group per (head, sequence): item l owns value columns l, l + WG, ... of S (HD
 * floats each, in registers); z lives in local memory.  (One group per head: a state updated in
 * place is read and written by that group only.)  Causal: the
 * sequence in chunks of C tokens (chunked prefix sums, f32): phi(Q), phi(K) of the chunk into local
 * memory, A = phi(Q) phi(K)^T masked j <= i (C x C, local), den_i = phi(q_i) . z + sum_j A_ij; item c
 * writes o_i[c] = (phi(q_i) . S[:, c] + sum_j A_ij v_j[c]) / den_i, then adds the chunk's
 * sum_j phi(k_j) v_j[c] to its column, and the items add sum_j phi(k_j) to z.  Not causal: a first
 * pass sums S and z over the whole sequence, a second writes o_i = phi(q_i) . S / phi(q_i) . z.
 * Tunables (-D): WG (value columns per group), C (tokens per chunk); HD (head dim, per build).
 * Declared in python/isthmus/ops/specs/linear_attention.py.
 * Launch (3-D): local (WG,1,1), global (WG, heads, batch).
 */
#if !defined(WG) || !defined(C) || !defined(HD)
#  error "linear_attention.cl: build it through its op, which passes every tunable (-D)"
#endif
#define CPI ((HD + WG - 1) / WG)   /* value columns per item */

static inline ACC feature(ACC x, int fmap)
{
    return fmap == 0 ? (x > (ACC)0 ? x + (ACC)1 : exp(x)) : fmap == 1 ? fmax(x, (ACC)0) : x;
}

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void linear_attention(const int seq, const int heads, const int causal, const int fmap,
                      __global const T* q, __global const T* k, __global const T* v, __global T* o,
                      __global float* state, const int has_state, const int write_state)
{
    __local ACC fq[C * HD];
    __local ACC fk[C * HD];
    __local ACC a[C * C];
    __local ACC den[C];
    __local ACC z[HD];
    const int lid = (int)get_local_id(0);
    const int h = (int)get_group_id(1), b = (int)get_group_id(2);
    const long row = (long)heads * HD;                 /* elements between tokens */
    const long base = (long)b * seq * row + (long)h * HD;
    __global float* st = state + ((long)b * heads + h) * HD * (HD + 1);

    ACC s[CPI * HD];
    for (int ci = 0; ci < CPI; ++ci) {
        const int c = lid + ci * WG;
        for (int d = 0; d < HD; ++d) s[ci * HD + d] = has_state && c < HD ? (ACC)st[d * (HD + 1) + c] : (ACC)0;
    }
    for (int d = lid; d < HD; d += WG) z[d] = has_state ? (ACC)st[d * (HD + 1) + HD] : (ACC)0;

    /* every barrier below is reached unconditionally (in loops of the same trip count for every
     * item): PoCL computed wrong sums with barriers inside if-blocks here */
    for (int pass = causal ? 1 : 0; pass < 2; ++pass) {
        /* causal: pass 1 only (outputs and sums together); not causal: pass 0 sums, pass 1 outputs */
        const int out_pass = pass == 1, sum_pass = causal || pass == 0;
        for (int t0 = 0; t0 < seq; t0 += C) {
            const int n = min(C, seq - t0);
            barrier(CLK_LOCAL_MEM_FENCE);   /* the previous chunk's readers are done */
            for (int e = lid; e < C * HD; e += WG) {
                const int t = e / HD, d = e % HD;
                const long at = base + (long)(t0 + t) * row + d;
                fq[e] = t < n && out_pass ? feature(LOAD(q, at), fmap) : (ACC)0;
                fk[e] = t < n && sum_pass ? feature(LOAD(k, at), fmap) : (ACC)0;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int e = lid; e < C * C; e += WG) {   /* A = phi(Q) phi(K)^T within the chunk, causal */
                const int i = e / C, j = e % C;
                ACC dot = (ACC)0;
                if (out_pass && causal && j <= i)
                    for (int d = 0; d < HD; ++d) dot += fq[i * HD + d] * fk[j * HD + d];
                a[e] = dot;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int i = lid; i < C; i += WG) {
                ACC dn = (ACC)0;
                for (int d = 0; d < HD; ++d) dn += fq[i * HD + d] * z[d];
                for (int j = 0; j <= i; ++j) dn += a[i * C + j];
                den[i] = dn;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int ci = 0; ci < CPI && out_pass; ++ci) {
                const int c = lid + ci * WG;
                for (int i = 0; i < n && c < HD; ++i) {
                    ACC num = (ACC)0;
                    for (int d = 0; d < HD; ++d) num += fq[i * HD + d] * s[ci * HD + d];
                    for (int j = 0; j <= i; ++j) num += a[i * C + j] * LOAD(v, base + (long)(t0 + j) * row + c);
                    STORE(o, base + (long)(t0 + i) * row + c, den[i] != (ACC)0 ? num / den[i] : (ACC)0);
                }
            }
            for (int ci = 0; ci < CPI && sum_pass; ++ci) {   /* the chunk's keys into the sums */
                const int c = lid + ci * WG;
                for (int j = 0; j < n && c < HD; ++j) {
                    const ACC vj = LOAD(v, base + (long)(t0 + j) * row + c);
                    for (int d = 0; d < HD; ++d) s[ci * HD + d] += fk[j * HD + d] * vj;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);   /* den read z above: now add to it */
            for (int d = lid; d < HD && sum_pass; d += WG) {
                ACC zd = z[d];
                for (int j = 0; j < n; ++j) zd += fk[j * HD + d];
                z[d] = zd;
            }
        }
    }
    if (write_state) {
        for (int ci = 0; ci < CPI; ++ci) {
            const int c = lid + ci * WG;
            for (int d = 0; d < HD && c < HD; ++d) st[d * (HD + 1) + c] = (float)s[ci * HD + d];
        }
        for (int d = lid; d < HD; d += WG) st[d * (HD + 1) + HD] = (float)z[d];
    }
}
