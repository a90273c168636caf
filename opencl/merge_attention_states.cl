/* isthmus: merge_attention_states.cl -- two attention results over disjoint key sets as one
 *
 *   o = (exp(lse_a - m) o_a + exp(lse_b - m) o_b) / (exp(lse_a - m) + exp(lse_b - m)),  m = max(lse_a, lse_b)
 *   lse = m + log(exp(lse_a - m) + exp(lse_b - m))
 *
 * Kernel:
 *   __kernel void merge_attention_states(const long total, const int hd, __global const T* o_a,
 *       __global const float* lse_a, __global const T* o_b, __global const float* lse_b,
 *       __global T* o, __global float* lse)
 * o_a, o_b, o: (tokens, heads, hd) = total elements; lse_a, lse_b, lse: (tokens, heads), natural
 * log (FlashInfer's cascade layout).  A row whose lse is -inf on one side takes the other side as it
 * is; -inf on both gives o = 0 and lse = -inf (no key on either side).  An item per element; the
 * item of a row's first element writes its lse.
 * Tunables (-D): WG.  Declared in python/isthmus/ops/specs/merge_attention_states.py.
 * Launch (1-D): local (WG,), global (ceil(total / WG) * WG,).
 */
#ifndef WG
#  error "merge_attention_states.cl: build it through its op, which passes every tunable (-D)"
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void merge_attention_states(const long total, const int hd, __global const T* o_a, __global const float* lse_a,
                            __global const T* o_b, __global const float* lse_b, __global T* o,
                            __global float* lse)
{
    const long e = (long)get_global_id(0);
    if (e >= total) return;
    const long row = e / hd;
    const float la = lse_a[row], lb = lse_b[row];
    const float m = fmax(la, lb);
    if (m == -INFINITY) {   /* neither side saw a key (NaN lse: fmax takes the other, as NumPy's fmax) */
        STORE(o, e, 0.0f);
        if (e % hd == 0) lse[row] = -INFINITY;
        return;
    }
    const float wa = exp(la - m), wb = exp(lb - m);
    const float sum = wa + wb;
    STORE(o, e, (wa * (float)LOAD(o_a, e) + wb * (float)LOAD(o_b, e)) / sum);
    if (e % hd == 0) lse[row] = m + log(sum);
}
