/* isthmus: scale.cl -- out = alpha * x
 *
 * Kernel:
 *   __kernel void scale(const long n, const ACC alpha, __global const T* x, __global T* out)
 * dtypes: float double half bfloat16 (the 16-bit ones compute in float and round once on store).
 * out may be x (in place: each item reads the element it writes).
 * Tunables (-D): WG (work-group size); its values, default and restriction are declared once, in
 *   the op's spec (python/isthmus/ops/specs/scale.py).
 * Launch (1-D): global = (ceil(n / WG) * WG,), local = (WG,).
 */
#ifndef WG
#define WG 256
#endif

__kernel ISTHMUS_LOCAL_SIZE(WG, 1, 1)
void scale(const long n, const ACC alpha, __global const T* x, __global T* out)
{
    const long i = get_global_id(0);
    if (i < n)
        STORE(out, i, alpha * (ACC)LOAD(x, i));
}
