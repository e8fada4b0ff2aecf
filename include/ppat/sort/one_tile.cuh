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

// Inputs that fit one block, sorted by it alone: up to 1024 keys, 256 threads with four
// each, so that each pass's ranking is a chain of four items, not sixteen; up to 4096, 512
// threads with eight each (256 with sixteen took 3-33% longer at 1,025-4,096 keys); up to
// 8192, 512 threads with sixteen each, in up to 148 KB of shared memory, where the
// cooperative launch took about twice as long and 1,024 threads with eight 10-22% longer
// (docs/patterns.md, "Radix sort", the figures).
template <class K, class V>
using one_tile_tiny_shape = tile_shape<K, V, tuning<256, 128, 0>, 4>;
template <class K, class V>
using one_tile_small_shape = tile_shape<K, V, tuning<512, 128, 0>, 8>;
template <class K, class V>
using one_tile_large_shape = tile_shape<K, V, tuning<512, 256, 0>>;

// Which of the passes have keys of more than one digit among the block's n keys (bit p for
// pass p): a digit is the same in every key where none of its bits differs, where the OR and
// the AND of the keys' images agree. Each warp's OR and AND go to `words` (2 x warps of
// them); passes_apart reads them after a barrier.
template <class Shape, class K>
__device__ __forceinline__ void publish_image_bits(const K (&keys)[Shape::items], unsigned n,
                                                   const radix_digit<K>& digit,
                                                   unsigned long long* words) {
  unsigned long long any = 0, every = ~0ull;
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    if (ranked_item<Shape::items>(i) < n) {
      const unsigned long long image = digit.image_of(keys[i]);
      any |= image;
      every &= image;
    }
  }
  any = warp_or_bits(any);
  every = warp_and_bits(every);
  const unsigned warp = threadIdx.x / 32;
  if (lane_id() == 0) {
    words[warp] = any;
    words[Shape::warps + warp] = every;
  }
}

template <class Shape, class K>
__device__ __forceinline__ unsigned passes_apart(const unsigned long long* words,
                                                 radix_passes passes, order ord, int end_bit) {
  unsigned long long any = 0, every = ~0ull;
#pragma unroll
  for (int w = 0; w < Shape::warps; ++w) {
    any |= words[w];
    every &= words[Shape::warps + w];
  }
  const unsigned long long differing = any ^ every;
  unsigned apart = 0;
  for (int p = 0; p < passes.count; ++p) {
    const radix_digit<K> digit = passes.digit<K>(p, ord, end_bit);
    if (((differing >> digit.shift) & digit.mask) != 0) apart |= 1u << p;
  }
  return apart;
}

// The keys (and values) the block holds, striped as the block radix rank takes them (item i
// of a thread is item ranked_item(i) of the tile), sorted: on return each thread holds
// those items of the sorted order. After each pass a thread takes back the keys (and values)
// at its positions of the staged digit order, which keeps the next pass stable. A pass in
// which one digit holds every key keeps their order, and is skipped. The storage is free
// again when it returns.
template <class Shape, class K, class V>
__device__ void sort_tile_in_registers(K (&keys)[Shape::items],
                                       value_or_char<V> (&values)[Shape::items], unsigned n,
                                       radix_passes passes, order ord, int end_bit,
                                       tile_storage<Shape, K, V>& storage) {
  constexpr int items = Shape::items;
  // The warps' image bits in the digits' places, which only the onesweep tiles use.
  static_assert(2 * Shape::warps <= radix, "the warps' image bits fit the digits' places");
  unsigned long long* const image_bits = storage.digit_keys_to;
  publish_image_bits<Shape>(keys, n, passes.digit<K>(0, ord, end_bit), image_bits);
  __syncthreads();
  const unsigned apart = passes_apart<Shape, K>(image_bits, passes, ord, end_bit);
  for (unsigned left = apart; left != 0; left &= left - 1) {  // the passes that sort
    const radix_digit<K> digit = passes.digit<K>(__ffs(int(left)) - 1, ord, end_bit);
    clear_tile_storage(storage);
    __syncthreads();
    unsigned ranks[items];
    rank_in_warps<items, false>([&](int i) { return digit(keys[i]); }, n, digit.mask, storage.lanes,
                                ranks);
    __syncthreads();
    add_tile_starts(storage.rank,
                    tile_digit_count<items>(storage.lanes, storage.rank, n, digit.mask));
    __syncthreads();
    stage_keys_in_digit_order<Shape, false>(keys, n, ranks, storage);
    if constexpr (has_values_of<V>)
      stage_values_in_digit_order<Shape, false>(values, n, ranks, storage);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const unsigned at = ranked_item<items>(i);
      if (at < n) {
        keys[i] = storage.staged.keys[int(at)];
        if constexpr (has_values_of<V>) values[i] = storage.staged.values[int(at)];
      }
    }
    __syncthreads();  // the next pass clears the rank's words, which share the staged bytes
  }
  // Where no pass sorted, no barrier has come between the reads of the image bits and their
  // next writes (a segmented sort's next segment).
  if (apart == 0) __syncthreads();
}

// n keys (and values) sorted by one block. A segmented sort runs it on each small segment.
template <class Shape, class K, class V>
__device__ void sort_in_one_tile(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                 unsigned n, radix_passes passes, order ord, int end_bit,
                                 tile_storage<Shape, K, V>& storage) {
  constexpr int items = Shape::items;
  K keys[items];
  value_or_char<V> values[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = ranked_item<items>(i);
    if (at < n) {
      keys[i] = keys_in[at];
      if constexpr (has_values_of<V>) values[i] = values_in[at];
    }
  }
  sort_tile_in_registers<Shape>(keys, values, n, passes, ord, end_bit, storage);
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = ranked_item<items>(i);
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

// The smallest one-tile shape that holds n keys (and values): f(Shape{}) and true, or false
// where none does.
template <class K, class V, class F>
bool on_smallest_one_tile(std::size_t n, F&& f) {
  using tiny = one_tile_tiny_shape<K, V>;
  using small = one_tile_small_shape<K, V>;
  using large = one_tile_large_shape<K, V>;
  if constexpr (tiny::tile_items < small::tile_items) {
    if (n <= tiny::tile_items) {
      f(tiny{});
      return true;
    }
  }
  if (n <= small::tile_items) {
    f(small{});
    return true;
  }
  if constexpr (small::tile_items < large::tile_items) {
    if (n <= large::tile_items) {
      f(large{});
      return true;
    }
  }
  return false;
}

// ---- Top-k of one tile ----------------------------------------------------------------------

// The first k of n keys in an order, with their positions, where the n fit one tile: the
// keys sorted with their positions as values, stably (so ties stay by position, as top_k
// promises), and the first k of the order written. One launch, where the radix select takes
// a dozen (docs/patterns.md, "Top-k").
template <class Shape, class K, class Index>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    one_tile_top_k_kernel(const K* in, unsigned n, unsigned k, K* keys_out, Index* indices_out,
                          order ord) {
  constexpr int items = Shape::items;
  constexpr int end_bit = 8 * int(sizeof(K));
  K keys[items];
  Index positions[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = ranked_item<items>(i);
    if (at < n) {
      keys[i] = in[at];
      positions[i] = Index(at);
    }
  }
  sort_tile_in_registers<Shape>(keys, positions, n, radix_passes::of(0, end_bit), ord, end_bit,
                                dynamic_shared_storage<tile_storage<Shape, K, Index>>());
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = ranked_item<items>(i);
    if (at < k) {
      keys_out[at] = keys[i];
      indices_out[at] = positions[i];
    }
  }
}

// True where n keys fit one tile and their top k are launched; false (nothing launched)
// where they do not.
template <class K, class Index>
bool one_tile_top_k(const K* in, std::size_t n, std::size_t k, K* keys_out, Index* indices_out,
                    order ord, const call_context& call) {
  return on_smallest_one_tile<K, Index>(n, [&](auto shape) {
    using Shape = decltype(shape);
    constexpr auto kernel = one_tile_top_k_kernel<Shape, K, Index>;
    allow_dynamic_shared_bytes<kernel>(call);
    kernel<<<1, Shape::threads, sizeof(tile_storage<Shape, K, Index>), call.stream()>>>(
        in, unsigned(n), unsigned(k), keys_out, indices_out, ord);
    check_launch(call.function(), "one_tile_top_k_kernel");
  });
}

}  // namespace ppat::detail
