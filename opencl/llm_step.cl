/* isthmus.llm: the bookkeeping of one captured decode step (python/isthmus/llm/model.py, Decoder).
 * The last kernel of the step's graph moves every sequence on by one token: the position of the
 * token fed next, the keys its attention sees, the offset of the sampler's random stream. Kept on
 * the device so that a step is one graph replay, with nothing uploaded or rebound between replays. */
__kernel void llm_advance(const int n, __global int* positions, __global int* lengths, __global long* offsets)
{
    const int i = (int)get_global_id(0);
    if (i < n) {
        positions[i] += 1;
        lengths[i] += 1;
        offsets[i] += 1;
    }
}
