/* isthmus: transpose.cl -- y = x^T
 *
 * Kernel:
 *   __kernel void transpose(const int rows, const int cols, __global const T* x, __global T* y)
 * x: rows x cols row-major; y: cols x rows row-major; y[c*rows + r] = x[r*cols + c].
 * It only copies, so T is any storage type (float16 is passed as T=ushort); ACC unused.
 * Tiled through local memory, tile[TILE][TILE+1] (the +1 column avoids bank conflicts);
 * a work-group moves one TILE x TILE tile, each work-item TILE/BLOCK_ROWS elements.
 * The tiles are numbered along one grid dimension (dimension 0, the one every backend allows
 * 2^31 - 1 groups in), so a tall or wide matrix never meets a per-dimension grid limit:
 *   ORDER 0: tile g is (row band g / tiles_c, column band g % tiles_c): consecutive groups read
 *            neighbouring parts of the same rows of x;
 *   ORDER 1: tile g is (row band g % tiles_r, column band g / tiles_r): consecutive groups write
 *            neighbouring parts of the same rows of y (a row of y not aligned to the memory's
 *            sectors is then completed while its partial sectors are still in the cache).
 * A single row or column (rows == 1 or cols == 1) is a copy: transpose_vector (same arguments,
 * same launch shape) copies TILE*TILE consecutive elements per group, instead of a tile that is
 * almost all padding.
 * Tunables (-D): TILE, BLOCK_ROWS, ORDER; their values, defaults and restrictions are declared
 *   once, in the op's spec (python/isthmus/ops/specs/transpose.py).
 * Launch (2-D, local = (TILE, BLOCK_ROWS)):
 *   global = (tiles * TILE, BLOCK_ROWS), tiles = ceil(rows/TILE) * ceil(cols/TILE)
 *            (rows == 1 or cols == 1: tiles = ceil(rows*cols / (TILE*TILE)))
 *   (rows == 0 or cols == 0: launch nothing.)
 */
/* every build passes every tunable (-D): their defaults are the spec's, not restated here */
#if !defined(BLOCK_ROWS) || !defined(ORDER) || !defined(TILE)
#  error "transpose.cl: build it through its op, which passes every tunable (-D)"
#endif
#if TILE % BLOCK_ROWS != 0
#  error "transpose.cl: TILE must be a multiple of BLOCK_ROWS"
#endif

__kernel ISTHMUS_LOCAL_SIZE(TILE, BLOCK_ROWS, 1)
void transpose(const int rows, const int cols, __global const T* x, __global T* y)
{
    __local T tile[TILE][TILE + 1];
    const int lx = (int)get_local_id(0);
    const int ly = (int)get_local_id(1);
    const size_t g = get_group_id(0);
#if ORDER == 0
    const size_t tiles_c = (size_t)((cols + TILE - 1) / TILE);
    const int c0 = (int)(g % tiles_c) * TILE;   /* first column of x in this tile */
    const int r0 = (int)(g / tiles_c) * TILE;   /* first row of x in this tile */
#else
    const size_t tiles_r = (size_t)((rows + TILE - 1) / TILE);
    const int r0 = (int)(g % tiles_r) * TILE;
    const int c0 = (int)(g / tiles_r) * TILE;
#endif

    /* read: rows r0+ly+j of x, column c0+lx (consecutive lx -> consecutive addresses) */
    const int c = c0 + lx;
    if (c < cols) {
#pragma unroll
        for (int j = 0; j < TILE; j += BLOCK_ROWS) {
            const int r = r0 + ly + j;
            if (r < rows) tile[ly + j][lx] = x[(size_t)r * (size_t)cols + (size_t)c];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* write: rows c0+ly+j of y, column r0+lx */
    const int r = r0 + lx;
    if (r < rows) {
#pragma unroll
        for (int j = 0; j < TILE; j += BLOCK_ROWS) {
            const int cc = c0 + ly + j;
            if (cc < cols) y[(size_t)cc * (size_t)rows + (size_t)r] = tile[lx][ly + j];
        }
    }
}

/* rows == 1 or cols == 1: the transpose is a copy of n = rows*cols elements, TILE*TILE per group */
__kernel ISTHMUS_LOCAL_SIZE(TILE, BLOCK_ROWS, 1)
void transpose_vector(const int rows, const int cols, __global const T* x, __global T* y)
{
    const size_t n = (size_t)rows * (size_t)cols;
    const size_t first = get_group_id(0) * (size_t)(TILE * TILE) + get_local_id(1) * TILE + get_local_id(0);
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const size_t i = first + (size_t)j * TILE;
        if (i < n) y[i] = x[i];
    }
}
