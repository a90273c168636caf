/* isthmus: glu.cl -- gated linear units: out = act(gate) * up (SwiGLU, GeGLU)
 *
 * Kernel:
 *   __kernel void glu(const long rows, const long cols, const long stride, const long up_off,
 *                     __global const T* gate, __global const T* up, __global T* out)
 * Row r's gate is gate[r*stride .. r*stride + cols), its up is up[r*stride + up_off ..], its out
 * out[r*cols ..]: separate gate and up buffers (stride = cols, up_off = 0; contiguous ones run as
 * one row), or one fused gate_up buffer passed as both (stride = 2*cols, up_off = cols).
 * ACT (fixed -D): 0 silu(g) = g / (1 + exp(-g)); 1 gelu, tanh form
 * 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))); 2 gelu, erf form 0.5 g (1 + erf(g / sqrt(2))).
 * dtypes: float double half bfloat16 (the 16-bit ones in float arithmetic, one rounding on store).
 * Tunables (-D): WG, VPT, LAYOUT (declared in python/isthmus/ops/specs/glu.py).
 * Launch (1-D), local = (WG,), global = rows * chunks * WG, chunks = ceil(cols / span):
 *   LAYOUT 0: a group's span is WG*VPT columns of one row; item t takes t + j*WG (coalesced);
 *   LAYOUT 1 (CPUs: OpenCL vectors, which the CUDA prelude lacks): a group's span is WG*VPT*16
 *     columns; each item a contiguous VPT*16 of them, read and written as 16-wide vectors.
 */
#if !defined(LAYOUT) || !defined(WG) || !defined(VPT) || !defined(ACT)
#  error "glu.cl: build it through its op, which passes every tunable (-D)"
#endif

#define GELU_K0 0.7978845608028654   /* sqrt(2/pi) */
#define GELU_K1 0.044715
#define RSQRT2 0.7071067811865476

#if ACT == 0
#  define ACTIVATE(g) ((g) / ((ACC)1 + exp(-(g))))
#elif ACT == 1
/* 0.5 (1 + tanh(z)) = 1 / (1 + exp(-2z)): the same function without 1 + tanh's cancellation for
 * negative g (an absolute error of g * 2^-24 in float) */
#  define ACTIVATE(g) ((g) / ((ACC)1 + exp((ACC)(-2 * GELU_K0) * ((g) + (ACC)GELU_K1 * (g) * (g) * (g)))))
#else
#  define ACTIVATE(g) ((ACC)0.5 * (g) * ((ACC)1 + erf((g) * (ACC)RSQRT2)))
#endif

#if LAYOUT == 1
#  define SPAN (WG * VPT * 16)
#  define VCAT_(a, b) a##b
#  define VCAT(a, b) VCAT_(a, b)
typedef VCAT(ACC, 16) accv;
#  if IS_HALF
#    define VLOAD16(p, i) vload_half16(0, (p) + (i))
#    define VSTORE16(v, p, i) vstore_half16((v), 0, (p) + (i))
#  elif IS_BF16
#    define VLOAD16(p, i) as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
#    define VSTORE16(v, p, i) vstore16(glu_float16_to_bf16(v), 0, (p) + (i))
/* FLOAT_TO_BF16 on 16 lanes: round to nearest even, NaN kept quiet */
static inline ushort16 glu_float16_to_bf16(float16 f)
{
    const uint16 u = as_uint16(f);
    const uint16 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort16(select(rounded, (u >> 16) | 0x40u, (u & 0x7fffffffu) > 0x7f800000u));
}
#  else
#    define VLOAD16(p, i) vload16(0, (p) + (i))
#    define VSTORE16(v, p, i) vstore16((v), 0, (p) + (i))
#  endif
#else
#  define SPAN (WG * VPT)
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void glu(const long rows, const long cols, const long stride, const long up_off,
         __global const T* gate, __global const T* up, __global T* out)
{
    const long chunks = (cols + SPAN - 1) / SPAN;
    const long group = (long)get_group_id(0);
    const long row = group / chunks;
    if (row >= rows)
        return;
    const long c0 = (group - row * chunks) * SPAN;
    __global const T* g = gate + row * stride;
    __global const T* u = up + row * stride + up_off;
    __global T* o = out + row * cols;
    const int t = (int)get_local_id(0);
#if LAYOUT == 0
    ACC gv[VPT], uv[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {   /* every load in flight before any arithmetic */
        const long c = c0 + t + (long)j * WG;
        gv[j] = c < cols ? LOAD(g, c) : (ACC)0;
        uv[j] = c < cols ? LOAD(u, c) : (ACC)0;
    }
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const long c = c0 + t + (long)j * WG;
        if (c < cols)
            STORE(o, c, ACTIVATE(gv[j]) * uv[j]);
    }
#else
    long c = c0 + (long)t * VPT * 16;
    const long end = c + VPT * 16;
    const long hi = end < cols ? end : cols;
    for (; c + 16 <= hi; c += 16) {
        const accv gg = VLOAD16(g, c);
        VSTORE16(ACTIVATE(gg) * VLOAD16(u, c), o, c);
    }
    for (; c < hi; ++c) {
        const ACC gs = LOAD(g, c);
        STORE(o, c, ACTIVATE(gs) * LOAD(u, c));
    }
#endif
}
