/* isthmus: axpy.cl -- y = a*x + y
 *
 * Kernel:
 *   __kernel void axpy(const long n, const ACC a,
 *                      __global const T* restrict x, __global T* restrict y)
 * dtypes: float double half int long uchar.  Floats compute in ACC (float for half) and
 *   round once on store; integers wrap modulo 2^bits like NumPy (computed unsigned).
 * Tunables (-D): WG (work-group size), VPT (elements per work-item); their values, defaults and
 *   restrictions are declared once, in the op's spec (python/isthmus/ops/specs/axpy.py).
 * Launch (1-D):
 *   global = (((n + WG*VPT - 1) // (WG*VPT)) * WG,)     local = (WG,)
 *   (n == 0: launch nothing.)  Work-group g owns elements [g*WG*VPT, (g+1)*WG*VPT);
 *   work-item j of it touches g*WG*VPT + j + k*WG, k = 0..VPT-1 (coalesced).
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(VPT) || !defined(WG)
#  error "axpy.cl: build it through its op, which passes every tunable (-D)"
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void axpy(const long n, const ACC a,
          __global const T* restrict x, __global T* restrict y)
{
    const long base = (long)get_group_id(0) * (long)(WG * VPT) + (long)get_local_id(0);
    const UACC ua = (UACC)a;
    if (base + (long)(VPT - 1) * WG < n) {
        /* full block: all loads first, then all stores */
        UACC xv[VPT], yv[VPT];
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            xv[k] = (UACC)LOAD(x, base + k * WG);
            yv[k] = (UACC)LOAD(y, base + k * WG);
        }
#pragma unroll
        for (int k = 0; k < VPT; ++k)
            STORE(y, base + k * WG, ua * xv[k] + yv[k]);
    } else {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const long i = base + k * WG;
            if (i < n)
                STORE(y, i, ua * (UACC)LOAD(x, i) + (UACC)LOAD(y, i));
        }
    }
}
