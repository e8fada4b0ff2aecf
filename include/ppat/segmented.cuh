// Segmented and batched sorts: each segment of an array, or each row of a matrix, sorted on
// its own, stably, in the whole-array sort's key order (sort.cuh), in one call.
//
//   ppat::segmented_sort_keys(in, out, n, num_segments, begin_offsets, end_offsets, order,
//                             stream)
//   ppat::segmented_sort_pairs(keys_in, keys_out, values_in, values_out, n, num_segments,
//                              begin_offsets, end_offsets, order, stream)
//   ppat::sort_keys_batched(in, out, rows, cols, order, stream)
//   ppat::sort_pairs_batched(keys_in, keys_out, values_in, values_out, rows, cols, order,
//                            stream)
//
// Segment i is [begin_offsets[i], end_offsets[i]): offsets are 32- or 64-bit device arrays,
// read on the device only. Segments may be empty, of any length, in any order and with gaps
// between them; output items outside every segment are left as they were. Offsets that are
// not a range of [0, n] are the caller's error and sort nothing. The batched forms sort each
// row of a row-major rows x cols matrix. sort/segmented.cuh picks a path for each segment.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/memory.cuh"
#include "core/no_values.cuh"
#include "core/segments.cuh"
#include "sort/plan.cuh"
#include "sort/segmented.cuh"

namespace ppat {

namespace detail {
template <class K, class V, class Offset>
void segmented_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                    std::size_t num_segments, const Offset* begin_offsets,
                    const Offset* end_offsets, order ord, cudaStream_t stream,
                    const char* function);
template <class K, class V>
void batched_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                  std::size_t rows, std::size_t cols, order ord, cudaStream_t stream,
                  const char* function);
}  // namespace detail

template <class K, class Offset>
void segmented_sort_keys(const K* in, K* out, std::size_t n, std::size_t num_segments,
                         const Offset* begin_offsets, const Offset* end_offsets,
                         order ord = order::ascending, cudaStream_t stream = 0) {
  detail::segmented_sort<K, detail::no_values>(in, out, nullptr, nullptr, n, num_segments,
                                               begin_offsets, end_offsets, ord, stream,
                                               "ppat::segmented_sort_keys");
}

template <class K, class V, class Offset>
void segmented_sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                          std::size_t n, std::size_t num_segments, const Offset* begin_offsets,
                          const Offset* end_offsets, order ord = order::ascending,
                          cudaStream_t stream = 0) {
  static_assert(std::is_trivially_copyable_v<V> && sizeof(V) <= 16,
                "ppat::segmented_sort_pairs: values are trivially copyable, of 1 to 16 bytes");
  detail::segmented_sort(keys_in, keys_out, values_in, values_out, n, num_segments, begin_offsets,
                         end_offsets, ord, stream, "ppat::segmented_sort_pairs");
}

template <class K>
void sort_keys_batched(const K* in, K* out, std::size_t rows, std::size_t cols,
                       order ord = order::ascending, cudaStream_t stream = 0) {
  detail::batched_sort<K, detail::no_values>(in, out, nullptr, nullptr, rows, cols, ord, stream,
                                             "ppat::sort_keys_batched");
}

template <class K, class V>
void sort_pairs_batched(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                        std::size_t rows, std::size_t cols, order ord = order::ascending,
                        cudaStream_t stream = 0) {
  static_assert(std::is_trivially_copyable_v<V> && sizeof(V) <= 16,
                "ppat::sort_pairs_batched: values are trivially copyable, of 1 to 16 bytes");
  detail::batched_sort(keys_in, keys_out, values_in, values_out, rows, cols, ord, stream,
                       "ppat::sort_pairs_batched");
}

namespace detail {

// The most segments each path can be given, from n and the fewest keys a segment that needs
// sorting can hold (2, or the length of every row): a segment of a bin holds more keys than
// the bin before it can, and segments do not overlap. With `few_launches`, the bins outside
// the short bins' one launch hold nothing (a bin's capacity is the one before it), and
// their segments join the long ones, whose chains take one cooperative launch; the chains
// take tiles of chain_tile_items<K, V>(few_launches).
template <class K, class V>
struct segment_paths {
  static constexpr std::array<unsigned, short_bins> bin_capacity =
      short_bin_capacities<K, V>(std::make_integer_sequence<int, short_bins>{});
  unsigned capacity[short_bins];
  std::size_t most_in_bin[short_bins];
  std::size_t most_chains;  // of long segments
  std::size_t most_tiles;   // of their chains

  segment_paths(std::size_t n, std::size_t segments, std::size_t fewest_keys, bool few_launches) {
    each_short_bin([&](auto bin) {
      constexpr int b = decltype(bin)::value;
      const bool used = !few_launches || in_short_launch<K, V, b>;
      capacity[b] = used || b == 0 ? bin_capacity[b] : capacity[b - 1];
    });
    std::size_t shortest = 2;  // of the bin
    for (int b = 0; b < short_bins; ++b) {
      const bool empty = capacity[b] < std::max(shortest, fewest_keys);
      most_in_bin[b] = empty ? 0 : std::min(segments, n / std::max(shortest, fewest_keys));
      shortest = std::max(shortest, std::size_t(capacity[b]) + 1);
    }
    const std::size_t most_long = std::min(segments, n / std::max(shortest, fewest_keys));
    most_chains = most_long == 0 ? 0 : most_long + ceil_div(n, portion_items);
    most_tiles =
        most_long == 0 ? 0 : ceil_div(n, chain_tile_items<K, V>(few_launches)) + most_chains;
  }
  // The bin of a segment of `keys` keys, or short_bins for a long one, where each bin has
  // its own launch.
  static int bin_of(std::size_t keys) {
    int bin = 0;
    while (bin < short_bins && keys > bin_capacity[bin])
      ++bin;
    return bin;
  }
};

// Up to this many keys a call is bound by the host's launches, one a path it may need
// (docs/patterns.md, "Segmented sorts"): it takes few launches instead.
constexpr std::size_t few_launches_items = std::size_t{1} << 22;

// Every segment of `segments` sorted: each binned on the device, then each path launched for
// as many segments as it may have been given. With `few_launches`, the short bins of
// 256-thread blocks share one launch, every longer segment is a chain, and the chains' steps
// take one cooperative launch; and where the whole input fits those blocks and the segments
// are few, one launch sorts them a block a segment, with no binning.
template <class K, class V, class Segments>
void segmented_radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                          std::size_t n, const Segments& segments, std::size_t fewest_keys,
                          order ord, bool few_launches, const call_context& call) {
  if (few_launches &&
      sort_segments_a_block_each(keys_in, keys_out, values_in, values_out, n, segments, ord, call))
    return;
  const segment_paths<K, V> paths(n, segments.count, fewest_keys, few_launches);
  std::size_t listed = 0;
  for (std::size_t most : paths.most_in_bin)
    listed += most;
  const std::size_t head_bytes = (short_bins + 1) * sizeof(unsigned long long);
  temporary_buffer<unsigned char> scratch(
      head_bytes + listed * sizeof(unsigned long long) + paths.most_chains * sizeof(segment_chain),
      call);
  call.check(cudaMemsetAsync(scratch.data(), 0, head_bytes, call.stream()), "cudaMemsetAsync");
  segment_bins bins{};
  bins.sizes = reinterpret_cast<unsigned long long*>(scratch.data());
  bins.chains_and_tiles = bins.sizes + short_bins;
  auto* list = reinterpret_cast<unsigned long long*>(scratch.data() + head_bytes);
  for (int b = 0; b < short_bins; ++b) {
    bins.segments[b] = list;
    list += paths.most_in_bin[b];
    bins.capacity[b] = paths.capacity[b];
  }
  bins.chains = reinterpret_cast<segment_chain*>(list);
  bins.chain_tile_items = unsigned(chain_tile_items<K, V>(few_launches));
  bin_segments_kernel<<<grid_stride_blocks(segments.count, binning_threads * segments_a_thread,
                                           call.limits(), 8),
                        binning_threads, 0, call.stream()>>>(segments, keys_in, keys_out, values_in,
                                                             values_out, bins);
  check_launch(call.function(), "bin_segments_kernel");

  if (few_launches) {
    sort_short_segments_in_one_launch(keys_in, keys_out, values_in, values_out, segments, bins,
                                      paths.most_in_bin, ord, call);
  }
  each_used_short_bin<K, V>([&](auto bin) {
    constexpr int b = decltype(bin)::value;
    if (paths.most_in_bin[b] == 0 || (few_launches && in_short_launch<K, V, b>)) return;
    sort_short_segments<b>(keys_in, keys_out, values_in, values_out, segments, bins.segments[b],
                           bins.sizes + b, paths.most_in_bin[b], ord, call);
  });
  if (paths.most_chains > 0) {
    sort_segment_chains(keys_in, keys_out, values_in, values_out, n, bins, paths.most_chains,
                        paths.most_tiles, radix_passes::of(0, 8 * int(sizeof(K))), ord,
                        few_launches, call);
  }
  scratch.release();
}

template <class K, class V, class Offset>
void segmented_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                    std::size_t num_segments, const Offset* begin_offsets,
                    const Offset* end_offsets, order ord, cudaStream_t stream,
                    const char* function) {
  static_assert(std::is_integral_v<Offset> && !std::is_same_v<Offset, bool> &&
                    (sizeof(Offset) == 4 || sizeof(Offset) == 8),
                "ppat segmented sorts take 32- or 64-bit integer offsets");
  require_sort_arguments(keys_in, keys_out, values_in, values_out, n, ord, 0, 8 * int(sizeof(K)),
                         function, true);
  constexpr bool has_values = has_values_of<V>;
  require_segment_offsets(begin_offsets, end_offsets, num_segments, keys_out, n, function,
                          has_values ? "keys_out" : "out");
  if constexpr (has_values) {
    require_segment_offsets(begin_offsets, end_offsets, num_segments, values_out, n, function,
                            "values_out");
  }
  if (n == 0 || num_segments == 0) return;
  const call_context call(stream, function);
  require_sort_buffers_readable(keys_in, keys_out, values_in, values_out, n, call);
  require_segment_offsets_readable(begin_offsets, end_offsets, num_segments, call);
  segmented_radix_sort(keys_in, keys_out, moved_values(values_in), moved_values(values_out), n,
                       offset_segments<Offset>{begin_offsets, end_offsets, n, num_segments}, 2, ord,
                       n <= few_launches_items, call);
}

// Rows all have one length, so the host knows their path: a row of 0 or 1 keys is a copy,
// rows that fit a block are sorted a block a row without binning (in wide groups where they
// are no more than those sort at once). The call is checked and not empty.
template <class K, class V>
void sort_rows(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t rows,
               std::size_t cols, order ord, const call_context& call) {
  const std::size_t n = rows * cols;
  if (cols == 1) {
    copy_unsorted(keys_in, keys_out, values_in, values_out, n, call);
    return;
  }
  const row_segments segments{cols, rows};
  const int row_bin = segment_paths<K, V>::bin_of(cols);
  if (row_bin < short_bins) {
    each_used_short_bin<K, V>([&](auto bin) {
      constexpr int b = decltype(bin)::value;
      if (b != row_bin) return;
      if constexpr (has_wide_groups<K, V, b>) {
        if (rows <= wide_groups_resident<K, V, b, row_segments>(call)) {
          sort_short_segments<b, true>(keys_in, keys_out, values_in, values_out, segments, nullptr,
                                       nullptr, rows, ord, call);
          return;
        }
      }
      sort_short_segments<b>(keys_in, keys_out, values_in, values_out, segments, nullptr, nullptr,
                             rows, ord, call);
    });
    return;
  }
  segmented_radix_sort(keys_in, keys_out, values_in, values_out, n, segments, cols, ord,
                       n <= few_launches_items, call);
}

template <class K, class V>
void batched_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                  std::size_t rows, std::size_t cols, order ord, cudaStream_t stream,
                  const char* function) {
  const std::size_t n = checked_element_count(rows, cols, sizeof(K), function);
  require_sort_arguments(keys_in, keys_out, values_in, values_out, n, ord, 0, 8 * int(sizeof(K)),
                         function, true);
  if (n == 0) return;
  const call_context call(stream, function);
  require_sort_buffers_readable(keys_in, keys_out, values_in, values_out, n, call);
  sort_rows(keys_in, keys_out, moved_values(values_in), moved_values(values_out), rows, cols, ord,
            call);
}

}  // namespace detail
}  // namespace ppat
