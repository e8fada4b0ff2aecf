// An input that fits one tile is sorted by one block, the keys in registers between passes
// and each pass staged in shared memory: no temporary memory, no memset, no grid-wide
// syncs, and a single pass through global memory each way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/no_values.cuh"
#include "../core/radix_rank.cuh"
#include "../core/warp.cuh"
#include "plan.cuh"
#include "tile.cuh"

namespace ppat::detail {

// Inputs that fit one block, sorted by it alone: up to 1024 keys, four a thread, so that
// each pass's ranking is a chain of four items, not sixteen; up to 4096, sixteen a thread
// (512 threads with eight measured no faster); up to 8192, 512 threads with sixteen each, in
// up to 148 KB of shared memory, where the cooperative launch took about twice as long
// (docs/patterns.md, "Radix sort", the figures).
template <class K, class V>
using one_tile_tiny_shape = tile_shape<K, V, tuning<256, 128, 0>, 4>;
template <class K, class V>
using one_tile_small_shape = tile_shape<K, V, tuning<256, 128, 0>>;
template <class K, class V>
using one_tile_large_shape = tile_shape<K, V, tuning<512, 256, 0>>;

// Keys warp-striped as in sort/tile.cuh; after each pass a thread takes back the keys (and
// values) at its positions of the staged digit order, which keeps the next pass stable. The
// storage is free again when it returns. A segmented sort runs it on each small segment.
template <class Shape, class K, class V>
__device__ void sort_in_one_tile(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                 unsigned n, radix_passes passes, order ord, int end_bit,
                                 tile_storage<Shape, K, V>& storage) {
  constexpr int items = Shape::items;
  const unsigned warp_first = unsigned(threadIdx.x / 32 * 32 * items);
  const unsigned lane = unsigned(lane_id());
  K keys[items];
  value_or_char<V> values[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = warp_first + unsigned(i * 32) + lane;
    if (at < n) {
      keys[i] = keys_in[at];
      if constexpr (has_values_of<V>) values[i] = values_in[at];
    }
  }
  for (int p = 0; p < passes.count; ++p) {
    const radix_digit<K> digit = passes.digit<K>(p, ord, end_bit);
    clear_tile_storage(storage);
    __syncthreads();
    unsigned ranks[items];
    rank_in_warps<items, false>([&](int i) { return digit(keys[i]); }, n, digit.mask, storage.lanes,
                                ranks);
    __syncthreads();
    add_tile_starts(storage.rank, tile_digit_count(storage.lanes, storage.rank, n, digit.mask));
    __syncthreads();
    stage_in_digit_order<Shape, false>(keys, n, values, ranks, storage);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const unsigned at = warp_first + unsigned(i * 32) + lane;
      if (at < n) {
        keys[i] = storage.staged.keys[int(at)];
        if constexpr (has_values_of<V>) values[i] = storage.staged.values[int(at)];
      }
    }
    __syncthreads();  // the next pass clears the rank's words, which share the staged bytes
  }
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = warp_first + unsigned(i * 32) + lane;
    if (at < n) {
      keys_out[at] = keys[i];
      if constexpr (has_values_of<V>) values_out[at] = values[i];
    }
  }
}

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    one_tile_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         unsigned n, radix_passes passes, order ord, int end_bit) {
  sort_in_one_tile<Shape>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                          dynamic_shared_storage<tile_storage<Shape, K, V>>());
}

template <class Shape, class K, class V>
void one_tile_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                   radix_passes passes, order ord, int end_bit, const call_context& call) {
  constexpr std::size_t shared_bytes = sizeof(tile_storage<Shape, K, V>);
  allow_dynamic_shared_bytes<one_tile_sort_kernel<Shape, K, V>>(call);
  one_tile_sort_kernel<Shape><<<1, Shape::threads, shared_bytes, call.stream()>>>(
      keys_in, keys_out, values_in, values_out, unsigned(n), passes, ord, end_bit);
  check_launch(call.function(), "one_tile_sort_kernel");
}

}  // namespace ppat::detail
