// Top-k: the k keys that come first in an order, with their input positions, in that order.
//
//   ppat::top_k(in, n, k, keys_out, indices_out, order, stream)
//   ppat::top_k_batched(in, rows, cols, k, keys_out, indices_out, order, stream)
//                       each row of a row-major rows x cols matrix: row r's k keys to
//                       keys_out[r * k, (r + 1) * k), their positions in the row to
//                       indices_out (torch.topk(x, k, dim=-1))
//
// order::descending (the default) takes the k largest, order::ascending the k smallest, in
// the sort's key order (NaN above +inf, every NaN one value); ties go to the lower position,
// and the output lists them by position, as a stable sort would. Every key type the sort
// takes; `Index` any integer type that holds n - 1 (cols - 1). k == 0 writes nothing;
// k > n (k > cols) is rejected. sort/radix_select.cuh holds the method: the k-th key found
// a digit at a time, ties parted by position, the later digits read from a list of the
// few keys still in question (listed in one read where a sample bounds them), and the k
// taken keys sorted; a block a row for the batched form (a warp a row for rows of up to
// 2,048 keys), a cluster a row for rows fewer than the SMs (which sorts up to 1,024 taken
// keys itself, in one launch), and the whole GPU a row for rows so few and long that it
// serves them best.
// An input that fits one tile (up to 8192 keys) is sorted whole by one block with its
// positions, which writes the first k (sort/one_tile.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/memory.cuh"
#include "segmented.cuh"
#include "sort.cuh"
#include "sort/radix_select.cuh"

namespace ppat {

namespace detail {
template <class K, class Index>
void top_k(const K* in, std::size_t n, std::size_t k, K* keys_out, Index* indices_out, order ord,
           cudaStream_t stream, const char* function);
template <class K, class Index>
void top_k_batched(const K* in, std::size_t rows, std::size_t cols, std::size_t k, K* keys_out,
                   Index* indices_out, order ord, cudaStream_t stream, const char* function);
}  // namespace detail

template <class K, class Index>
void top_k(const K* in, std::size_t n, std::size_t k, K* keys_out, Index* indices_out,
           order ord = order::descending, cudaStream_t stream = 0) {
  detail::top_k(in, n, k, keys_out, indices_out, ord, stream, "ppat::top_k");
}

template <class K, class Index>
void top_k_batched(const K* in, std::size_t rows, std::size_t cols, std::size_t k, K* keys_out,
                   Index* indices_out, order ord = order::descending, cudaStream_t stream = 0) {
  detail::top_k_batched(in, rows, cols, k, keys_out, indices_out, ord, stream,
                        "ppat::top_k_batched");
}

namespace detail {

// The checks both forms share: `keys` keys a row (n, or cols), k of them taken from each of
// `rows`.
template <class K, class Index>
void require_top_k_arguments(const K* in, std::size_t rows, std::size_t keys, std::size_t k,
                             K* keys_out, Index* indices_out, order ord, const char* function) {
  static_assert(radix_key<K>::supported, "ppat::top_k takes the key types ppat sorts");
  static_assert(std::is_integral_v<Index> && !std::is_same_v<Index, bool>,
                "ppat::top_k writes positions as integers");
  require(ord == order::ascending || ord == order::descending, function, "ord",
          "must be order::ascending or order::descending");
  if (k > keys) {
    throw_invalid_argument(function, "k",
                           "is " + std::to_string(k) + ", more than the " + std::to_string(keys) +
                               (rows == 1 ? " keys" : " keys of a row"));
  }
  if (keys > 0 && keys - 1 > std::size_t(std::numeric_limits<Index>::max())) {
    throw_invalid_argument(
        function, "indices_out",
        "has an index type that cannot hold position " + std::to_string(keys - 1));
  }
  const std::size_t n = checked_element_count(rows, keys, sizeof(K), function);
  const std::size_t taken = rows * k;
  require_buffer(in, n, function, "in");
  require_buffer(keys_out, taken, function, "keys_out");
  require_buffer(indices_out, taken, function, "indices_out");
  require_disjoint(in, n, keys_out, taken, function, "in", "keys_out");
  require_disjoint(in, n, indices_out, taken, function, "in", "indices_out");
  require_disjoint(keys_out, taken, indices_out, taken, function, "keys_out", "indices_out");
}

template <class K, class Index>
void require_top_k_buffers_readable(const K* in, std::size_t n, std::size_t taken,
                                    const K* keys_out, const Index* indices_out,
                                    const call_context& call) {
  require_device_readable(in, n, call, "in");
  require_device_readable(keys_out, taken, call, "keys_out");
  require_device_readable(indices_out, taken, call, "indices_out");
}

// The bits that hold every position below n.
inline int position_bit_width(std::size_t n) {
  int bits = 0;
  while (bits < 64 && ((n - 1) >> bits) != 0)
    ++bits;
  return bits;
}

// The most keys the candidate list holds: n / 16 (at least 65,536, at most n); for keys of
// every bit pattern, the first digit leaves about n / 256 (docs/patterns.md, "Top-k").
inline std::size_t select_list_capacity(std::size_t n) {
  return std::min(n, std::max<std::size_t>(n / 16, std::size_t(1) << 16));
}

// Where a sample bounds the threshold (sort/radix_select.cuh): inputs of at least 256 keys a
// sample key (2^22; at 2^20 the sample and the list's passes cost more than the reads they
// save, docs/patterns.md, "Top-k"), and k small enough that the keys at or below the bound, about
// `rank` strides of the input, are expected to fill at most half the candidate list. The rank is
// the sample's expected count of taken keys plus four standard deviations and four: a sample that
// leaves fewer than k keys listed costs one read of the input.
struct select_sample_plan {
  unsigned long long rank = 0;  // 0: no sample
  unsigned long long most = 0;  // sample keys at or below the bound, at most

  static select_sample_plan of(std::size_t n, std::size_t k) {
    const std::size_t stride = n / select_sample_items;
    if (stride < 256) return {};
    const double expected = double(k) / double(stride);
    const double rank = std::ceil(expected + 4 * std::sqrt(expected) + 4);
    const unsigned long long most = select_list_capacity(n) / 2 / stride;
    if (rank > double(most)) return {};
    return {static_cast<unsigned long long>(rank), most};
  }
};

// The k of n keys (0 < k <= n) taken and sorted by the whole GPU, positions of Position
// (which holds n - 1): a checked call.
template <class Position, class K, class Index>
void select_top_k_at(const K* in, std::size_t n, std::size_t k, K* keys_out, Index* indices_out,
                     order ord, const call_context& call) {
  const char* function = call.function();
  using state_type = radix_select_state<K, Position>;
  const bool descending = ord == order::descending;
  // The composite keys' bits (radix_select.cuh): the image's, then the positions' in whole
  // digits.
  const int position_width = position_bit_width(n);
  const int position_bits =
      int(ceil_div(std::size_t(position_width), select_digit_bits)) * select_digit_bits;
  const int composite_bits = 8 * int(sizeof(rank_image_type<K>)) + position_bits;
  const std::size_t capacity = select_list_capacity(n);
  temporary_buffer<state_type> state(1, call);
  temporary_buffer<select_candidate<K, Position>> candidate_list(capacity, call);
  temporary_buffer<Position> taken(k, call);
  const select_candidates<K, Position> candidates{candidate_list.data(), capacity};
  const select_list<Position> taken_list{taken.data(), k};

  const bool aligned = reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
  const auto pass =
      aligned ? select_pass_kernel<true, K, Position> : select_pass_kernel<false, K, Position>;
  const auto write = aligned ? write_selected_kernel<true, K, Position>
                             : write_selected_kernel<false, K, Position>;
  const unsigned blocks = unsigned(
      std::min(ceil_div(n, select_warps * select_warp_items<K>),
               resident_blocks<select_pass_kernel<true, K, Position>>(select_threads, 0, call)));
  start_select_kernel<<<1, select_bins, 0, call.stream()>>>(state.data(), n, k, position_bits);
  check_launch(function, "start_select_kernel");
  const select_sample_plan sample = select_sample_plan::of(n, k);
  if (sample.rank != 0) {
    temporary_buffer<rank_image_type<K>> sample_images(select_sample_items, call);
    gather_sample_kernel<<<unsigned(select_sample_items / 256), 256, 0, call.stream()>>>(
        in, n, descending, sample_images.data());
    check_launch(function, "gather_sample_kernel");
    sample_bound_kernel<K, Position><<<1, select_threads, 0, call.stream()>>>(
        sample_images.data(), sample.rank, sample.most, state.data());
    check_launch(function, "sample_bound_kernel");
    sample_images.release();
    const auto list =
        aligned ? list_bounded_kernel<true, K, Position> : list_bounded_kernel<false, K, Position>;
    const unsigned list_blocks = unsigned(
        std::min(ceil_div(n, select_warps * select_warp_items<K>),
                 resident_blocks<list_bounded_kernel<true, K, Position>>(select_threads, 0, call)));
    list<<<list_blocks, select_threads, 0, call.stream()>>>(in, n, descending, state.data(),
                                                            candidates);
    check_launch(function, "list_bounded_kernel");
  }
  for (int shift = composite_bits - select_digit_bits; shift >= 0; shift -= select_digit_bits) {
    pass<<<blocks, select_threads, 0, call.stream()>>>(in, n, descending, shift, state.data(),
                                                       candidates, taken_list);
    check_launch(function, "select_pass_kernel");
  }
  write<<<blocks, select_threads, 0, call.stream()>>>(in, n, descending, state.data(), candidates,
                                                      taken_list);
  check_launch(function, "write_selected_kernel");
  state.release();
  candidate_list.release();

  // The taken keys in input order, then sorted: stable, so ties stay by position.
  temporary_buffer<Position> ordered(k, call);
  sort_on_its_path<Position, no_values>(taken.data(), ordered.data(), nullptr, nullptr, k,
                                        order::ascending, 0, position_width, call);
  taken.release();
  temporary_pair<K, Index> taken_pairs(k, k, call);
  gather_taken_kernel<<<grid_stride_blocks(k, 1024, call.limits(), 8), 256, 0, call.stream()>>>(
      in, ordered.data(), k, taken_pairs.first(), taken_pairs.second());
  check_launch(function, "gather_taken_kernel");
  ordered.release();
  sort_on_its_path(taken_pairs.first(), keys_out, moved_values(taken_pairs.second()),
                   moved_values(indices_out), k, ord, 0, 8 * int(sizeof(K)), call);
  taken_pairs.release();
}

template <class K, class Index>
void select_top_k(const K* in, std::size_t n, std::size_t k, K* keys_out, Index* indices_out,
                  order ord, const call_context& call) {
  if (n - 1 <= std::numeric_limits<unsigned>::max())
    select_top_k_at<unsigned>(in, n, k, keys_out, indices_out, ord, call);
  else
    select_top_k_at<unsigned long long>(in, n, k, keys_out, indices_out, ord, call);
}

template <class K, class Index>
void top_k(const K* in, std::size_t n, std::size_t k, K* keys_out, Index* indices_out, order ord,
           cudaStream_t stream, const char* function) {
  require_top_k_arguments(in, 1, n, k, keys_out, indices_out, ord, function);
  if (k == 0) return;
  const call_context call(stream, function);
  require_top_k_buffers_readable(in, n, k, keys_out, indices_out, call);
  if (one_tile_top_k(in, n, k, keys_out, indices_out, ord, call)) return;
  select_top_k(in, n, k, keys_out, indices_out, ord, call);
}

// The cluster a row takes where its run of tiles a block fits shared memory: the fewest
// blocks (1, 2, 4 or 8; more than 1 where the GPU has clusters) whose runs of the row's
// tiles take at most select_cluster_block_bytes each. None (blocks == 0) where no cluster
// holds the row, or where the rows are as many as the SMs: a block a row then fills the GPU,
// and measured faster than clusters (docs/patterns.md, "Top-k").
constexpr std::size_t select_cluster_block_bytes = 96 * 1024;

struct select_cluster_shape {
  unsigned blocks;
  std::size_t tiles_a_block;
  std::size_t shared_bytes;

  static select_cluster_shape of(std::size_t rows, std::size_t cols, std::size_t image_bytes,
                                 const device_limits& limits) {
    if (rows >= std::size_t(limits.sm_count)) return {0, 0, 0};
    const std::size_t tiles = ceil_div(cols, select_tile_items);
    for (unsigned blocks = 1; blocks <= unsigned(select_cluster_most_blocks); blocks *= 2) {
      if (blocks > 1 && !limits.has_clusters) break;
      const std::size_t tiles_a_block = ceil_div(tiles, blocks);
      const std::size_t bytes = tiles_a_block * select_tile_items * image_bytes;
      if (bytes <= select_cluster_block_bytes) return {blocks, tiles_a_block, bytes};
    }
    return {0, 0, 0};
  }
};

// Each row's taken keys, a cluster a row (select_rows_cluster_kernel), as many clusters as
// fit the GPU at once; sorted too where `sort_taken` (k within taken_sorted_shape's tile),
// the shared memory then as large as the block sort's storage at least (above 32 keys).
template <class K, class Index>
void select_in_clusters(const K* in, std::size_t rows, std::size_t cols, std::size_t k,
                        bool descending, const select_cluster_shape& shape, K* taken_keys,
                        Index* taken_positions, bool sort_taken, const call_context& call) {
  constexpr auto kernel = select_rows_cluster_kernel<K, Index>;
  allow_dynamic_shared_bytes<kernel>(call);
  const std::size_t shared_bytes =
      sort_taken && k > 32 ? std::max(shape.shared_bytes,
                                      sizeof(tile_storage<taken_sorted_shape<K, Index>, K, Index>))
                           : shape.shared_bytes;
  cudaLaunchAttribute cluster_size{};
  cluster_size.id = cudaLaunchAttributeClusterDimension;
  cluster_size.val.clusterDim.x = shape.blocks;
  cluster_size.val.clusterDim.y = 1;
  cluster_size.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(shape.blocks);
  config.blockDim = dim3(select_threads);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = call.stream();
  config.attrs = shape.blocks > 1 ? &cluster_size : nullptr;
  config.numAttrs = shape.blocks > 1 ? 1 : 0;
  const std::size_t clusters = shape.blocks > 1
                                   ? resident_clusters<kernel>(config, shape.blocks, call)
                                   : resident_blocks<kernel>(select_threads, shared_bytes, call);
  const std::size_t launched = std::min(rows, std::max<std::size_t>(clusters, 1));
  config.gridDim = dim3(unsigned(launched * shape.blocks));
  call.check(cudaLaunchKernelEx(&config, kernel, in, rows, cols, k, descending, shape.tiles_a_block,
                                taken_keys, taken_positions, sort_taken),
             "cudaLaunchKernelEx (select_rows_cluster_kernel)");
}

// Rows this much longer than they are many take the whole GPU one after another: a block a
// row would leave most SMs idle while few blocks read long rows.
constexpr std::size_t whole_gpu_row_ratio = std::size_t(1) << 17;

template <class K, class Index>
void top_k_batched(const K* in, std::size_t rows, std::size_t cols, std::size_t k, K* keys_out,
                   Index* indices_out, order ord, cudaStream_t stream, const char* function) {
  require_top_k_arguments(in, rows, cols, k, keys_out, indices_out, ord, function);
  if (k == 0 || rows == 0) return;
  const call_context call(stream, function);
  require_top_k_buffers_readable(in, rows * cols, rows * k, keys_out, indices_out, call);
  if (cols / rows >= whole_gpu_row_ratio || cols > std::numeric_limits<unsigned>::max()) {
    for (std::size_t row = 0; row < rows; ++row)
      select_top_k(in + row * cols, cols, k, keys_out + row * k, indices_out + row * k, ord, call);
    return;
  }
  const select_cluster_shape cluster =
      select_cluster_shape::of(rows, cols, sizeof(K), call.limits());
  const bool descending = ord == order::descending;
  // Few rows: a cluster a row, which sorts up to a tile of taken keys itself.
  if (cluster.blocks > 0 && k <= std::size_t(taken_sorted_shape<K, Index>::tile_items)) {
    select_in_clusters(in, rows, cols, k, descending, cluster, keys_out, indices_out, true, call);
    return;
  }
  // Each row's taken keys and their positions, sorted afterwards.
  temporary_pair<K, Index> taken(rows * k, rows * k, call);
  if (cluster.blocks > 0) {
    select_in_clusters(in, rows, cols, k, descending, cluster, taken.first(), taken.second(), false,
                       call);
  } else if (cols <= std::size_t(select_tile_items)) {
    constexpr auto kernel = select_short_rows_kernel<K, Index>;
    const std::size_t blocks =
        std::min(ceil_div(rows, select_warps), resident_blocks<kernel>(select_threads, 0, call));
    kernel<<<unsigned(blocks), select_threads, 0, call.stream()>>>(in, rows, cols, k, descending,
                                                                   taken.first(), taken.second());
    check_launch(function, "select_short_rows_kernel");
  } else {
    constexpr auto kernel = select_rows_kernel<K, Index>;
    const std::size_t blocks = std::min(rows, resident_blocks<kernel>(select_threads, 0, call));
    kernel<<<unsigned(blocks), select_threads, 0, call.stream()>>>(in, rows, cols, k, descending,
                                                                   taken.first(), taken.second());
    check_launch(function, "select_rows_kernel");
  }
  sort_rows(taken.first(), keys_out, moved_values(taken.second()), moved_values(indices_out), rows,
            k, ord, call);
  taken.release();
}

}  // namespace detail
}  // namespace ppat
