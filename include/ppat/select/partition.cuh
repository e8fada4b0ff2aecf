// partition's count pass. partition writes its rejected items after every kept one, so each
// tile must learn the total kept before it writes them. Where every tile fits on the GPU at
// once, the tiles wait for the last one's inclusive prefix (one cooperative launch); beyond
// that, this pass counts the kept items first, and the tiles then read the total: one more
// read of the input, the least a stable partition in one buffer can add (docs/patterns.md,
// "Stream compaction, unique, runs").
#pragma once

#include <cstddef>

#include "../core/operators.cuh"
#include "../core/warp.cuh"
#include "rules.cuh"
#include "tile.cuh"

namespace ppat::detail {

// Adds the items the rule keeps into *io.num_selected (zeroed before). The blocks loop over the
// selection's tiles from the last to the first, so that the first tiles, which the partition
// pass takes first, are the ones still in L2 when it starts.
template <class Shape, bool Aligned, class T, class V, class Count, class Rule>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    count_selected_kernel(select_buffers<T, V, Count, Rule> io, unsigned tiles) {
  unsigned long long kept = 0;
  for (long long t = static_cast<long long>(tiles) - 1 - blockIdx.x; t >= 0; t -= gridDim.x) {
    const select_tile<Shape> tile(unsigned(t), io.n);
    register_items<T, Shape::vec> items[Shape::rows];
    register_items<value_or_char<V>, Shape::vec> values[has_values_of<V> ? Shape::rows : 1];
    load_tile<Shape, Aligned>(io, tile, items, values);
    unsigned selected[Shape::rows];
    pick_items(io, tile, items, selected);
#pragma unroll
    for (int r = 0; r < Shape::rows; ++r)
      kept += unsigned(__popc(selected[r]));
  }
  kept = warp_reduce_commutative(kept, plus{});
  if (lane_id() == 0 && kept != 0)
    atomicAdd(reinterpret_cast<unsigned long long*>(io.num_selected), kept);
}

}  // namespace ppat::detail
