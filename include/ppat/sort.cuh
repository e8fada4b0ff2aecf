// Radix sort: stable, of keys or key-value pairs, ascending or descending, on any range of
// the key's bits, into outputs that are either the inputs themselves (sorted in place) or
// disjoint from them.
//
//   ppat::sort_keys(in, out, n, order, begin_bit, end_bit, stream)
//   ppat::sort_pairs(keys_in, keys_out, values_in, values_out, n, order, begin_bit, end_bit,
//                    stream)
//
// A key is sorted by its order-preserving unsigned image (sort/radix_key.cuh: NaNs after
// +inf, -0.0 before +0.0): small inputs by merging the images, the rest least significant
// digit first, up to 8 bits a pass. The size of the input picks the path, each in a file of
// its own under sort/:
//
//   merge_tile.cuh  keys of 4 or 8 bytes sorted by more than 16 bits, up to 8192 (4096 for
//                   floats, pairs and bit ranges of 4-byte keys): one block's merge sort, by
//                   the keys' images, stable as the radix sort is
//   one_tile.cuh    up to one tile (8192 keys or fewer): one block, every pass in shared memory
//   cluster.cuh     up to 16 tiles (65,536 keys of up to 8 bytes a pair): one cluster of
//                   blocks, every pass in their shared memory, keys sent between them
//   one_launch.cuh  up to as many tiles as the GPU holds at once (about 2^20 4-byte keys on
//                   an H200): one cooperative launch, the blocks waiting for one another
//                   between passes
//   counting.cuh    8- and 16-bit integer keys alone, by all their bits, beyond one launch:
//                   a histogram, a scan and a fill of the runs
//   onesweep.cuh    everything else: a digit count of every pass, then one launch a pass
//                   (Adinets & Merrill 2022)
//
// The one-launch sort and onesweep run the same tile (sort/tile.cuh): rank the keys by
// digit, publish the tile's digit counts, stage keys and values in digit order, learn
// through a look-back with a chain per digit where each digit's keys go, and write them
// there. Every path but the counting one skips a pass in which one digit holds every key,
// and the one-launch sort and onesweep, whose counts come first, every pass where the keys
// are sorted already. plan.cuh holds what they all share: the argument
// checks, the passes, the buffers between them and each pass's role.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "core/device.cuh"
#include "core/no_values.cuh"
#include "sort/cluster.cuh"
#include "sort/counting.cuh"
#include "sort/merge_tile.cuh"
#include "sort/one_launch.cuh"
#include "sort/one_tile.cuh"
#include "sort/onesweep.cuh"
#include "sort/plan.cuh"
#include "sort/radix_key.cuh"

namespace ppat {

namespace detail {
template <class K, class V>
void radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                order ord, int begin_bit, int end_bit, cudaStream_t stream, const char* function);
template <class K, class V>
void sort_on_its_path(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                      std::size_t n, order ord, int begin_bit, int end_bit,
                      const call_context& call);
}  // namespace detail

template <class K>
void sort_keys(const K* in, K* out, std::size_t n, order ord = order::ascending, int begin_bit = 0,
               int end_bit = 8 * sizeof(K), cudaStream_t stream = 0) {
  detail::radix_sort<K, detail::no_values>(in, out, nullptr, nullptr, n, ord, begin_bit, end_bit,
                                           stream, "ppat::sort_keys");
}

template <class K, class V>
void sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                order ord = order::ascending, int begin_bit = 0, int end_bit = 8 * sizeof(K),
                cudaStream_t stream = 0) {
  static_assert(std::is_trivially_copyable_v<V> && sizeof(V) <= 16,
                "ppat::sort_pairs: values are trivially copyable, of 1 to 16 bytes");
  detail::radix_sort(keys_in, keys_out, values_in, values_out, n, ord, begin_bit, end_bit, stream,
                     "ppat::sort_pairs");
}

namespace detail {

// The path for n keys: the smallest that holds them.
template <class K, class V>
void radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                order ord, int begin_bit, int end_bit, cudaStream_t stream, const char* function) {
  require_sort_arguments(keys_in, keys_out, values_in, values_out, n, ord, begin_bit, end_bit,
                         function, true);
  if (n == 0) return;
  const call_context call(stream, function);
  require_sort_buffers_readable(keys_in, keys_out, values_in, values_out, n, call);
  sort_on_its_path(keys_in, keys_out, moved_values(values_in), moved_values(values_out), n, ord,
                   begin_bit, end_bit, call);
}

// n > 0 keys in checked buffers, sorted on the path n picks: also for calls that sort
// buffers of their own (top_k's), which a captured call cannot ask about.
template <class K, class V>
void sort_on_its_path(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                      std::size_t n, order ord, int begin_bit, int end_bit,
                      const call_context& call) {
  const radix_passes passes = radix_passes::of(begin_bit, end_bit);
  if (passes.count == 0) {
    copy_unsorted(keys_in, keys_out, values_in, values_out, n, call);
    return;
  }

  const bool merged = on_merge_tile<K, V>(n, begin_bit, end_bit, call, [&](auto shape) {
    merge_tile_sort<decltype(shape)>(keys_in, keys_out, values_in, values_out, n, ord, begin_bit,
                                     end_bit, call);
  });
  if (merged) return;
  const bool in_one_tile = on_smallest_one_tile<K, V>(n, [&](auto shape) {
    one_tile_sort<decltype(shape)>(keys_in, keys_out, values_in, values_out, n, passes, ord,
                                   end_bit, call);
  });
  if (in_one_tile) return;
  if (cluster_sort(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit, call)) return;
  using small_launch = one_launch_small_shape<K, V>;
  using large_launch = one_launch_large_shape<K, V>;
  if constexpr (!std::is_same_v<small_launch, large_launch>) {
    if (n < one_launch_large_tiles_from &&
        ceil_div(n, small_launch::tile_items) <= resident_tiles<small_launch, K, V>(call)) {
      one_launch_sort<small_launch>(keys_in, keys_out, values_in, values_out, n, passes, ord,
                                    end_bit, call);
      return;
    }
  }
  if (ceil_div(n, large_launch::tile_items) <= resident_tiles<large_launch, K, V>(call)) {
    one_launch_sort<large_launch>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                                  call);
    return;
  }
  if constexpr (std::is_same_v<V, no_values> && std::is_integral_v<K> && sizeof(K) <= 2) {
    if (begin_bit == 0 && end_bit == int(8 * sizeof(K))) {
      counting_sort(keys_in, keys_out, n, ord, call);
      return;
    }
  }
  onesweep_sort(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit, call);
}

}  // namespace detail
}  // namespace ppat
