// Textbook radix sort: the two ways it is first taught, both stable least-significant-digit
// sorts with ppat::sort_keys' semantics (every key type, both orders, bit ranges).
//
//   1. binary_split_sort_keys / _pairs     radix sort as scan: one bit a pass. A kernel flags
//                                          the keys whose bit is 0, an exclusive scan of the
//                                          flags (Blelloch, three-phase) gives each of them its
//                                          place, and the keys whose bit is 1 follow all of them
//                                          in input order: place = zeros + i - zeros before i.
//                                          32 passes for 32-bit keys, each moving the keys, the
//                                          flags and their scan through memory.
//   2. reduce_then_scan_sort_keys / _pairs radix sort as histogram + scan + scatter: 4 bits a
//                                          pass, three kernels a pass. Each block counts its
//                                          tile's 16 digits; an exclusive scan of the counts,
//                                          laid out digit by digit, gives every (digit, tile)
//                                          its first place; each block then ranks its tile's
//                                          keys stably and scatters them there. Keys are read
//                                          twice a pass.
//
// The production ppat::sort_keys reads and writes the keys once per 8-bit pass: its tiles
// learn their places from the tiles before them through a look-back, one chain per digit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "../core/arguments.cuh"
#include "../core/block.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/no_values.cuh"
#include "../core/operators.cuh"
#include "../core/warp.cuh"
#include "../sort/plan.cuh"
#include "../sort/radix_key.cuh"
#include "scan.cuh"

namespace ppat::textbook {
namespace detail {

template <class K, class V, class Pass>
void lsd_radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                    order ord, int begin_bit, int end_bit, int digit_bits, cudaStream_t stream,
                    const char* function, Pass pass);
template <class K, class V>
struct binary_split_pass;
template <class K, class V>
struct reduce_then_scan_pass;

}  // namespace detail

template <class K>
void binary_split_sort_keys(const K* in, K* out, std::size_t n, order ord = order::ascending,
                            int begin_bit = 0, int end_bit = 8 * sizeof(K),
                            cudaStream_t stream = 0) {
  using no_values = ppat::detail::no_values;
  detail::lsd_radix_sort<K, no_values>(in, out, nullptr, nullptr, n, ord, begin_bit, end_bit, 1,
                                       stream, "ppat::textbook::binary_split_sort_keys",
                                       detail::binary_split_pass<K, no_values>{});
}

template <class K, class V>
void binary_split_sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                             std::size_t n, order ord = order::ascending, int begin_bit = 0,
                             int end_bit = 8 * sizeof(K), cudaStream_t stream = 0) {
  detail::lsd_radix_sort(keys_in, keys_out, values_in, values_out, n, ord, begin_bit, end_bit, 1,
                         stream, "ppat::textbook::binary_split_sort_pairs",
                         detail::binary_split_pass<K, V>{});
}

template <class K>
void reduce_then_scan_sort_keys(const K* in, K* out, std::size_t n, order ord = order::ascending,
                                int begin_bit = 0, int end_bit = 8 * sizeof(K),
                                cudaStream_t stream = 0) {
  using no_values = ppat::detail::no_values;
  detail::lsd_radix_sort<K, no_values>(in, out, nullptr, nullptr, n, ord, begin_bit, end_bit, 4,
                                       stream, "ppat::textbook::reduce_then_scan_sort_keys",
                                       detail::reduce_then_scan_pass<K, no_values>{});
}

template <class K, class V>
void reduce_then_scan_sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                 std::size_t n, order ord = order::ascending, int begin_bit = 0,
                                 int end_bit = 8 * sizeof(K), cudaStream_t stream = 0) {
  detail::lsd_radix_sort(keys_in, keys_out, values_in, values_out, n, ord, begin_bit, end_bit, 4,
                         stream, "ppat::textbook::reduce_then_scan_sort_pairs",
                         detail::reduce_then_scan_pass<K, V>{});
}

namespace detail {

using ppat::detail::call_context;
using ppat::detail::ceil_div;
using ppat::detail::check_launch;
using ppat::detail::no_values;
using ppat::detail::radix_digit;
using ppat::detail::temporary_buffer;

// The passes of `digit_bits` bits over [begin_bit, end_bit); `pass(keys_from, keys_to,
// values_from, values_to, n, digit, call)` moves the keys stably by one digit.
template <class K, class V, class Pass>
void lsd_radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                    order ord, int begin_bit, int end_bit, int digit_bits, cudaStream_t stream,
                    const char* function, Pass pass) {
  ppat::detail::require_sort_arguments(keys_in, keys_out, values_in, values_out, n, ord, begin_bit,
                                       end_bit, function, false);
  if (n == 0) return;
  const call_context call(stream, function);
  ppat::detail::require_sort_buffers_readable(keys_in, keys_out, values_in, values_out, n, call);
  const int passes = (end_bit - begin_bit + digit_bits - 1) / digit_bits;
  if (passes == 0) {
    ppat::detail::copy_unsorted(keys_in, keys_out, values_in, values_out, n, call);
    return;
  }
  ppat::detail::pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes,
                                           call);
  using image_type = typename ppat::detail::radix_key<K>::image_type;
  for (int p = 0; p < passes; ++p) {
    const int shift = begin_bit + p * digit_bits;
    const int bits = end_bit - shift < digit_bits ? end_bit - shift : digit_bits;
    const radix_digit<K> digit{
        ord == order::descending ? image_type(~image_type(0)) : image_type(0), shift,
        (1u << bits) - 1u};
    pass(buffers.keys_from(p), buffers.keys_to(p), buffers.values_from(p), buffers.values_to(p), n,
         digit, call);
  }
  buffers.release();
}

// ---- Rung 1: one bit a pass, split by a scan ----------------------------------------------

template <class K>
__global__ void zero_bit_flags_kernel(const K* keys, std::size_t n, radix_digit<K> digit,
                                      std::size_t* flags);
template <class K, class V>
__global__ void split_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                             std::size_t n, const std::size_t* flags,
                             const std::size_t* zeros_before);

template <class K, class V>
struct binary_split_pass {
  void operator()(const K* keys_from, K* keys_to, const V* values_from, V* values_to, std::size_t n,
                  radix_digit<K> digit, const call_context& call) const {
    temporary_buffer<std::size_t> flags(n, call);
    temporary_buffer<std::size_t> zeros_before(n, call);
    constexpr int threads = 256;
    const unsigned blocks = ppat::detail::grid_stride_blocks(n, threads, call.limits(), 8);
    zero_bit_flags_kernel<<<blocks, threads, 0, call.stream()>>>(keys_from, n, digit, flags.data());
    check_launch(call.function(), "zero_bit_flags_kernel");
    three_phase_scan<blelloch_block_scan, true>(flags.data(), zeros_before.data(), n,
                                                std::size_t{0}, plus{}, call.stream(),
                                                call.function());
    split_kernel<<<blocks, threads, 0, call.stream()>>>(keys_from, keys_to, values_from, values_to,
                                                        n, flags.data(), zeros_before.data());
    check_launch(call.function(), "split_kernel");
    zeros_before.release();
    flags.release();
  }
};

template <class K>
__global__ void zero_bit_flags_kernel(const K* keys, std::size_t n, radix_digit<K> digit,
                                      std::size_t* flags) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    flags[i] = digit(keys[i]) == 0 ? 1 : 0;
}

// The keys whose bit is 0 go to the number of such keys before them; the others after all
// of those, in input order.
template <class K, class V>
__global__ void split_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                             std::size_t n, const std::size_t* flags,
                             const std::size_t* zeros_before) {
  const std::size_t zeros = zeros_before[n - 1] + flags[n - 1];
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t to = flags[i] != 0 ? zeros_before[i] : zeros + i - zeros_before[i];
    keys_out[to] = keys_in[i];
    if constexpr (ppat::detail::has_values_of<V>) values_out[to] = values_in[i];
  }
}

// ---- Rung 2: histogram, scan, scatter ------------------------------------------------------

// Tiles of 256 threads with 4 consecutive keys each; 16 digits.
constexpr int split_threads = 256;
constexpr int split_items = 4;
constexpr int tile_keys = split_threads * split_items;
constexpr int digits = 16;

template <class K>
__global__ void tile_digit_counts_kernel(const K* keys, std::size_t n, std::size_t tiles,
                                         radix_digit<K> digit, std::size_t* counts);
template <class K, class V>
__global__ void tile_scatter_kernel(const K* keys_in, K* keys_out, const V* values_in,
                                    V* values_out, std::size_t n, std::size_t tiles,
                                    radix_digit<K> digit, const std::size_t* starts);

template <class K, class V>
struct reduce_then_scan_pass {
  void operator()(const K* keys_from, K* keys_to, const V* values_from, V* values_to, std::size_t n,
                  radix_digit<K> digit, const call_context& call) const {
    const std::size_t tiles = ceil_div(n, tile_keys);
    // counts[d * tiles + t]: digit d's keys in tile t, so that the scan orders them by digit,
    // then by tile.
    temporary_buffer<std::size_t> counts(digits * tiles, call);
    temporary_buffer<std::size_t> starts(digits * tiles, call);
    const unsigned blocks = unsigned(std::min<std::size_t>(tiles, 65535));
    tile_digit_counts_kernel<<<blocks, split_threads, 0, call.stream()>>>(keys_from, n, tiles,
                                                                          digit, counts.data());
    check_launch(call.function(), "tile_digit_counts_kernel");
    three_phase_scan<blelloch_block_scan, true>(counts.data(), starts.data(), digits * tiles,
                                                std::size_t{0}, plus{}, call.stream(),
                                                call.function());
    tile_scatter_kernel<<<blocks, split_threads, 0, call.stream()>>>(
        keys_from, keys_to, values_from, values_to, n, tiles, digit, starts.data());
    check_launch(call.function(), "tile_scatter_kernel");
    starts.release();
    counts.release();
  }
};

template <class K>
__global__ void __launch_bounds__(split_threads)
    tile_digit_counts_kernel(const K* keys, std::size_t n, std::size_t tiles, radix_digit<K> digit,
                             std::size_t* counts) {
  __shared__ unsigned tile_counts[digits];
  for (std::size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    if (threadIdx.x < digits) tile_counts[threadIdx.x] = 0;
    __syncthreads();
    for (int j = 0; j < split_items; ++j) {
      const std::size_t i = tile * tile_keys + threadIdx.x * split_items + j;
      if (i < n) atomicAdd(&tile_counts[digit(keys[i])], 1u);
    }
    __syncthreads();
    if (threadIdx.x < digits) counts[threadIdx.x * tiles + tile] = tile_counts[threadIdx.x];
    __syncthreads();
  }
}

// A key's place: where its digit's keys of this tile start, plus the keys of its digit
// before it in the tile: in earlier threads (a block scan a digit), then earlier in its own
// thread.
template <class K, class V>
__global__ void __launch_bounds__(split_threads)
    tile_scatter_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                        std::size_t n, std::size_t tiles, radix_digit<K> digit,
                        const std::size_t* starts) {
  __shared__ ppat::detail::block_sum_storage<split_threads / 32, unsigned> digit_sums;
  for (std::size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::size_t first = tile * tile_keys + threadIdx.x * split_items;
    unsigned own[split_items];
    for (int j = 0; j < split_items; ++j)
      own[j] = first + j < n ? digit(keys_in[first + j]) : unsigned(digits);
    for (unsigned d = 0; d < digits; ++d) {
      unsigned mine = 0;
      for (int j = 0; j < split_items; ++j)
        mine += own[j] == d ? 1 : 0;
      unsigned before = ppat::detail::block_exclusive_sum(mine, digit_sums);
      for (int j = 0; j < split_items; ++j) {
        if (own[j] != d) continue;
        const std::size_t to = starts[d * tiles + tile] + before++;
        keys_out[to] = keys_in[first + j];
        if constexpr (ppat::detail::has_values_of<V>) values_out[to] = values_in[first + j];
      }
    }
  }
}

}  // namespace detail
}  // namespace ppat::textbook
