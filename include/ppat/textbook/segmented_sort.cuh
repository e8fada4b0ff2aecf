// Textbook segmented sort: the bitonic sorting network, one block a segment, with
// ppat::segmented_sort_keys' semantics (every key type, both orders, stable, offsets read on
// the device, items outside every segment left as they were).
//
//   bitonic_segmented_sort_keys / _pairs   Batcher's network: for each block size k = 2, 4,
//                                          ..., the two sorted halves of every k-block are
//                                          merged by comparing each item with its mirror in
//                                          the other half, then halving the distance (k / 4,
//                                          ..., 1) within each half; a barrier after every
//                                          step. log2(n) (log2(n) + 1) / 2 steps of n / 2
//                                          compare-exchanges each.
//
// The network is oblivious: every step compares the same places whatever the keys, which is
// why it was the first sort taught on GPUs, and why it does O(n log^2 n) work where a radix
// sort does O(n). It is not stable, so each key is compared as (image, position): positions
// make every item distinct, and equal keys keep their input order. A segment of up to
// `bitonic_shared_keys` keys is sorted in shared memory; a longer one runs the same network
// on global memory of its own, one step at a time.
//
// The production ppat::segmented_sort_keys sorts short segments a warp or a block each in
// registers and long ones in radix passes over chains of tiles (sort/segmented.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/memory.cuh"
#include "../core/no_values.cuh"
#include "../core/segments.cuh"
#include "../sort/plan.cuh"
#include "../sort/radix_key.cuh"

namespace ppat::textbook {
namespace detail {
template <class K, class V, class Offset>
void bitonic_segmented_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                            std::size_t n, std::size_t num_segments, const Offset* begin_offsets,
                            const Offset* end_offsets, order ord, cudaStream_t stream,
                            const char* function);
}  // namespace detail

template <class K, class Offset>
void bitonic_segmented_sort_keys(const K* in, K* out, std::size_t n, std::size_t num_segments,
                                 const Offset* begin_offsets, const Offset* end_offsets,
                                 order ord = order::ascending, cudaStream_t stream = 0) {
  detail::bitonic_segmented_sort<K, ppat::detail::no_values>(
      in, out, nullptr, nullptr, n, num_segments, begin_offsets, end_offsets, ord, stream,
      "ppat::textbook::bitonic_segmented_sort_keys");
}

template <class K, class V, class Offset>
void bitonic_segmented_sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                  std::size_t n, std::size_t num_segments,
                                  const Offset* begin_offsets, const Offset* end_offsets,
                                  order ord = order::ascending, cudaStream_t stream = 0) {
  static_assert(std::is_trivially_copyable_v<V> && sizeof(V) <= 16,
                "ppat::textbook::bitonic_segmented_sort_pairs: values are trivially copyable, of "
                "1 to 16 bytes");
  detail::bitonic_segmented_sort(keys_in, keys_out, values_in, values_out, n, num_segments,
                                 begin_offsets, end_offsets, ord, stream,
                                 "ppat::textbook::bitonic_segmented_sort_pairs");
}

namespace detail {

using ppat::detail::segment_range;

// A block of 256 threads a segment; segments of up to 2048 keys in shared memory (16 KB of
// 8-byte images and 8 KB of positions).
constexpr int bitonic_threads = 256;
constexpr std::size_t bitonic_shared_keys = 2048;

// The key's image in the sort's order (descending: complemented), as the radix sort ranks it.
template <class K>
using image_of_key = typename ppat::detail::radix_key<K>::image_type;

template <class Image, class Position>
__device__ void compare_exchange(Image* images, Position* positions, std::size_t lo,
                                 std::size_t hi) {
  const bool hi_first =
      images[hi] < images[lo] || (images[hi] == images[lo] && positions[hi] < positions[lo]);
  if (!hi_first) return;
  const Image image = images[lo];
  images[lo] = images[hi];
  images[hi] = image;
  const Position position = positions[lo];
  positions[lo] = positions[hi];
  positions[hi] = position;
}

// Pair t of a step whose comparators are `distance` apart: its lower place, t with a 0 bit
// inserted at the distance's bit (t = q x distance + r gives 2q x distance + r).
__device__ inline std::size_t lower_place(std::size_t t, std::size_t distance) {
  return 2 * t - (t & (distance - 1));
}

// The network over `length` items, as if padded to a power of two with items after every
// real one. Every comparator puts the item that comes first at its lower place, so a
// comparator that reaches a padding item would leave both where they are: it is skipped, and
// the padding is never stored.
template <class Image, class Position>
__device__ void bitonic_network(Image* images, Position* positions, std::size_t length) {
  std::size_t padded = 1;
  while (padded < length)
    padded *= 2;
  const std::size_t pairs = padded / 2;
  for (std::size_t k = 2; k <= padded; k *= 2) {
    // Each item of a k-block's lower half against its mirror in the upper half.
    for (std::size_t t = threadIdx.x; t < pairs; t += blockDim.x) {
      const std::size_t lo = lower_place(t, k / 2);
      const std::size_t hi = lo ^ (k - 1);
      if (hi < length) compare_exchange(images, positions, lo, hi);
    }
    __syncthreads();
    // Then within each half, at half the distance each step.
    for (std::size_t distance = k / 4; distance >= 1; distance /= 2) {
      for (std::size_t t = threadIdx.x; t < pairs; t += blockDim.x) {
        const std::size_t lo = lower_place(t, distance);
        const std::size_t hi = lo + distance;
        if (hi < length) compare_exchange(images, positions, lo, hi);
      }
      __syncthreads();
    }
  }
}

// One segment, in `images` and `positions` (shared or global memory): each key's image and
// its position in the segment, sorted, then each output item taken from the position that
// lands on it.
template <class Image, class Position, class K, class V>
__device__ void sort_segment(Image* images, Position* positions, const K* keys_in, K* keys_out,
                             const V* values_in, V* values_out, segment_range segment, Image flip) {
  const K* const keys = keys_in + segment.begin;
  for (std::size_t i = threadIdx.x; i < segment.length; i += blockDim.x) {
    images[i] = Image(ppat::detail::radix_key<K>::image(keys[i]) ^ flip);
    positions[i] = Position(i);
  }
  __syncthreads();
  bitonic_network(images, positions, segment.length);
  for (std::size_t i = threadIdx.x; i < segment.length; i += blockDim.x) {
    const std::size_t from = segment.begin + positions[i];
    keys_out[segment.begin + i] = keys_in[from];
    if constexpr (ppat::detail::has_values_of<V>) values_out[segment.begin + i] = values_in[from];
  }
  __syncthreads();  // before the next segment's images replace these
}

// Block b sorts segments b, b + gridDim.x, ...; a long segment in its own range of the global
// images and positions (segments do not overlap).
template <class K, class V, class Segments>
__global__ void __launch_bounds__(bitonic_threads)
    bitonic_segments_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                            Segments segments, image_of_key<K> flip, image_of_key<K>* long_images,
                            std::size_t* long_positions) {
  using image = image_of_key<K>;
  __shared__ image images[bitonic_shared_keys];
  __shared__ unsigned positions[bitonic_shared_keys];
  for (std::size_t s = blockIdx.x; s < segments.count; s += gridDim.x) {
    const segment_range segment = segments(s);
    if (segment.length <= bitonic_shared_keys) {
      sort_segment(images, positions, keys_in, keys_out, values_in, values_out, segment, flip);
    } else {
      sort_segment(long_images + segment.begin, long_positions + segment.begin, keys_in, keys_out,
                   values_in, values_out, segment, flip);
    }
  }
}

template <class K, class V, class Offset>
void bitonic_segmented_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                            std::size_t n, std::size_t num_segments, const Offset* begin_offsets,
                            const Offset* end_offsets, order ord, cudaStream_t stream,
                            const char* function) {
  static_assert(std::is_integral_v<Offset> && !std::is_same_v<Offset, bool> &&
                    (sizeof(Offset) == 4 || sizeof(Offset) == 8),
                "ppat segmented sorts take 32- or 64-bit integer offsets");
  ppat::detail::require_sort_arguments(keys_in, keys_out, values_in, values_out, n, ord, 0,
                                       8 * int(sizeof(K)), function, false);
  constexpr bool has_values = ppat::detail::has_values_of<V>;
  ppat::detail::require_segment_offsets(begin_offsets, end_offsets, num_segments, keys_out, n,
                                        function, has_values ? "keys_out" : "out");
  if constexpr (has_values) {
    ppat::detail::require_segment_offsets(begin_offsets, end_offsets, num_segments, values_out, n,
                                          function, "values_out");
  }
  if (n == 0 || num_segments == 0) return;
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_sort_buffers_readable(keys_in, keys_out, values_in, values_out, n, call);
  ppat::detail::require_segment_offsets_readable(begin_offsets, end_offsets, num_segments, call);
  // Where a segment longer than shared memory holds sorts: the host does not know the
  // lengths, so room for all n keys.
  using image = image_of_key<K>;
  ppat::detail::temporary_buffer<image> long_images(n, call);
  ppat::detail::temporary_buffer<std::size_t> long_positions(n, call);
  const image flip = ord == order::descending ? image(~image(0)) : image(0);
  const unsigned blocks = unsigned(std::min<std::size_t>(num_segments, 65535));
  bitonic_segments_kernel<<<blocks, bitonic_threads, 0, call.stream()>>>(
      keys_in, keys_out, values_in, values_out,
      ppat::detail::offset_segments<Offset>{begin_offsets, end_offsets, n, num_segments}, flip,
      long_images.data(), long_positions.data());
  ppat::detail::check_launch(function, "bitonic_segments_kernel");
  long_positions.release();
  long_images.release();
}

}  // namespace detail
}  // namespace ppat::textbook
