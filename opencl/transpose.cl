/* isthmus: transpose.cl -- y = x^T
 *
 * Kernel:
 *   __kernel void transpose(const int rows, const int cols, __global const T* x, __global T* y)
 * x: rows x cols row-major; y: cols x rows row-major; y[c*rows + r] = x[r*cols + c].
 * It only copies, so T is any storage type (float16 is passed as T=ushort); ACC unused.
 * Tiled through local memory, tile[TILE][TILE+1] (the +1 column avoids bank conflicts);
 * a work-group moves one TILE x TILE tile, each work-item TILE/BLOCK_ROWS elements.
 * Tunables (-D):
 *   TILE        8,16,32,64      default 32
 *   BLOCK_ROWS  1,2,4,8,16,32   default 8
 *   restrictions: TILE % BLOCK_ROWS == 0, TILE*BLOCK_ROWS <= max_work_group_size,
 *                 TILE*(TILE+1)*sizeof(T) <= local_mem_size
 * Launch (2-D; dim 0 runs along cols of x):
 *   global = (((cols + TILE - 1) // TILE) * TILE, ((rows + TILE - 1) // TILE) * BLOCK_ROWS)
 *   local  = (TILE, BLOCK_ROWS)
 *   (rows == 0 or cols == 0: launch nothing.  CUDA: (rows + TILE - 1)//TILE <= 65535.)
 */
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
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
    const int c0 = (int)get_group_id(0) * TILE;   /* first column of x in this tile */
    const int r0 = (int)get_group_id(1) * TILE;   /* first row of x in this tile */

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
