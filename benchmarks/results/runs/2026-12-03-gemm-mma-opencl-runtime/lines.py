# model for gemm_mma-opencl-runtime-h200-2026-12-03d.md section 3 (run: python3 lines.py)
# distinct 128-byte lines per quarter-warp (8 x 16 B) for cp.async writes and ldmatrix reads: 128x32 A (k-contig) and 32x128 B tiles
def swz_f(r, cols):
    if cols >= 64: return r & 7
    if cols == 32: return (r >> 1) & 3
    return (r >> 2) & (cols // 8 - 1)
def off(r, c, cols, swz):
    if swz: return r * cols + ((((c >> 3) ^ swz_f(r, cols))) << 3) + (c & 7)
    return r * (cols + 8) + c
def lines(addrs): return len({a // 128 for a in addrs})
for swz in (0, 1):
    for base in (0x400, 0x410):
        res = {}
        for name, rows, cols in (("A", 128, 32), ("B", 32, 128)):
            wr = [lines([base + 2 * off((e0 + t) // (cols // 8), ((e0 + t) % (cols // 8)) * 8, cols, swz) for t in range(8)])
                  for e0 in range(0, rows * cols // 8, 8)]
            rd = [lines([base + 2 * off(r0 + l, c, cols, swz) for l in range(8)]) for r0 in range(0, rows, 8) for c in range(0, cols, 8)]
            res[name] = (sum(wr) / len(wr), sum(rd) / len(rd))
        print("swz" if swz else "pad", hex(base), {k: f"write {v[0]:.2f} read {v[1]:.2f}" for k, v in res.items()})
